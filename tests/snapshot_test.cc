// Backup and restore end to end (issue 35): `gpool admin snapshot save` on a
// live 3-replica cluster, the cluster gone, every replica's data dir restored
// from the file with `gpool admin snapshot restore`, and the new cluster holds
// the saved state (and nothing committed after the save: a task started
// since is stopped), leads at a higher term, and its workers take its commands.
// Issue 48: the file is signed (`admin snapshot keygen`, `save --sign-key`)
// and restored verified (`restore --verify-key`); an unsigned file, another
// key's, and one edited after signing are refused with nothing written.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>
#include <map>

#include <gtest/gtest.h>

#include "client/client.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/base/sha256.h"
#include "protocol/snapshot_file.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

// What a job is, as far as a restore must keep it.
std::string Describe(const GetJobReply& job) {
  std::string text = job.summary.name + " " + job.summary.state + " queue=" + job.spec.queue +
                     " user=" + job.spec.user;
  for (const auto& task : job.tasks) text += " task" + std::to_string(task.index) + "@" + task.node;
  return text;
}

// A call made again while a just-started cluster's leadership settles (on
// a loaded machine a first leader can lose its lead before the client's
// retries run out): until it answers anything but NotLeader or Unavailable.
template <typename Call>
auto Settled(Call call) {
  auto result = call();
  WaitFor([&] {
    if (result.ok() || (result.status().code() != StatusCode::kNotLeader &&
                        result.status().code() != StatusCode::kUnavailable)) {
      return true;
    }
    result = call();
    return false;
  }, 30s);
  return result;
}

Result<GetJobReply> SettledGetJob(Client& client, uint64_t id) {
  return Settled([&] { return client.GetJob(JobId(id)); });
}

// A read-only CLI command, run again while leadership settles (as Settled).
CommandResult SettledCli(LocalCluster& cluster, std::vector<std::string> args) {
  CommandResult result;
  WaitFor([&] {
    result = cluster.Cli(args);
    return result.exit_code == 0 || (result.err.find("NotLeader") == std::string::npos &&
                                     result.err.find("Unavailable") == std::string::npos);
  }, 30s);
  return result;
}

std::map<uint64_t, std::string> JobsOf(Client& client, const std::vector<uint64_t>& ids) {
  std::map<uint64_t, std::string> jobs;
  for (uint64_t id : ids) {
    auto job = SettledGetJob(client, id);
    jobs[id] = job.ok() ? Describe(*job) : job.status().ToString();
  }
  return jobs;
}

bool JobIs(Client& client, uint64_t id, const std::string& state) {
  auto job = client.GetJob(JobId(id));
  return job.ok() && job->summary.state == state;
}

TEST(SnapshotTest, ALiveClustersStateRoundTripsThroughSaveAndRestore) {
  LocalClusterOptions options;
  options.coordinators = 3;
  options.workers = 2;
  LocalCluster cluster(options);
  std::unique_ptr<Client> client;
  ASSERT_NO_FATAL_FAILURE(StartReadyCluster(cluster, client));

  // A queue, a user, and jobs that finished, run, and were cancelled.
  ASSERT_EQ(cluster.Cli({"queue", "create", "research", "--capability", "gpu=6"}).exit_code, 0);
  ASSERT_EQ(cluster.Cli({"admin", "user", "create", "alice"}).exit_code, 0);
  JobSpec done = ShellJob("done", 1, "true");
  JobSpec running = ShellJob("running", 2, "sleep 600");
  running.queue = "research";
  JobSpec cancelled = ShellJob("cancelled", 1, "sleep 600");
  std::vector<uint64_t> ids;
  for (const JobSpec& spec : {done, running, cancelled}) {
    auto submitted = client->Submit(spec, "");
    ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
    ids.push_back(submitted->job_id);
  }
  ASSERT_TRUE(WaitFor([&] { return JobIs(*client, ids[0], "Succeeded") && JobIs(*client, ids[1], "Running") &&
                                   JobIs(*client, ids[2], "Running"); }, 60s));
  ASSERT_TRUE(client->CancelJob(JobId(ids[2]), 0).ok());
  ASSERT_TRUE(WaitFor([&] { return JobIs(*client, ids[2], "Cancelled"); }, 30s));
  const auto saved_jobs = JobsOf(*client, ids);
  const auto saved_status = client->ClusterStatus();
  ASSERT_TRUE(saved_status.ok());

  const std::string sign_prefix = cluster.dir() + "/snap-sign";
  const std::string other_prefix = cluster.dir() + "/other-sign";
  for (const std::string& prefix : {sign_prefix, other_prefix}) {
    const CommandResult keygen = cluster.Cli({"admin", "snapshot", "keygen", "--out", prefix});
    ASSERT_EQ(keygen.exit_code, 0) << keygen.err;
  }
  const std::string verify_key = sign_prefix + ".pub";
  const std::string file = cluster.dir() + "/backup.gpoolsnap";
  const CommandResult saved = cluster.Cli({"admin", "snapshot", "save", file, "--sign-key", sign_prefix + ".key"});
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  EXPECT_NE(saved.out.find("saved " + file), std::string::npos) << saved.out;
  const CommandResult info = cluster.Cli({"admin", "snapshot", "info", file, "--verify-key", verify_key});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("(signature verified)"), std::string::npos) << info.out;

  // Committed after the save: gone after the restore.
  auto later = client->Submit(ShellJob("after-the-save", 1, "true"), "");
  ASSERT_TRUE(later.ok());
  auto later_running = client->Submit(ShellJob("running-after-the-save", 1, "sleep 600"), "");
  ASSERT_TRUE(later_running.ok());
  ASSERT_TRUE(WaitFor([&] { return JobIs(*client, later->job_id, "Succeeded") &&
                                   JobIs(*client, later_running->job_id, "Running"); }, 60s));

  std::string peers;
  for (int i = 0; i < 3; ++i) peers += (i ? "," : "") + std::to_string(i + 1) + "=" + cluster.peer_endpoint(i);
  // A data dir in use is refused and left alone.
  const CommandResult refused =
      cluster.Cli({"admin", "snapshot", "restore", file, "--data-dir", cluster.ReplicaDataDir(0), "--peers", peers});
  EXPECT_EQ(refused.exit_code, 3) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("is not empty"), std::string::npos) << refused.err;

  // Issue 48, finding 7: a tampered file is refused, typed, and writes
  // nothing: a header term a forger set to 2^64-1 and re-digested, and the
  // same edit in place (the digest left as it was).
  {
    auto original = ReadSnapshotFile(file);
    ASSERT_TRUE(original.ok()) << original.status().ToString();
    ASSERT_EQ(original->header.version, 3u) << "save --sign-key writes format 3";
    SnapshotFileHeader forged = original->header;
    forged.term = UINT64_MAX;
    const std::string redigested = cluster.dir() + "/forged.gpoolsnap";
    std::ofstream(redigested, std::ios::binary) << EncodeSnapshotFile(forged, original->state);
    const std::string in_place = cluster.dir() + "/edited.gpoolsnap";
    std::ofstream(in_place, std::ios::binary)
        << EncodeSnapshotFilePrefix(forged) << original->state
        << EncodeSnapshotFile(original->header, original->state).substr(
               EncodeSnapshotFilePrefix(original->header).size() + original->state.size());
    const std::string target = cluster.dir() + "/tampered-data";
    for (const auto& [path, says] : {std::pair{redigested, std::string("term 18446744073709551615 is outside")},
                                     std::pair{in_place, std::string("term 18446744073709551615 is outside")}}) {
      const CommandResult tampered =
          cluster.Cli({"admin", "snapshot", "restore", path, "--data-dir", target, "--peers", peers});
      EXPECT_NE(tampered.exit_code, 0) << tampered.out;
      EXPECT_NE(tampered.err.find(says), std::string::npos) << tampered.err;
      EXPECT_EQ(tampered.out.find("restored"), std::string::npos) << tampered.out;
      EXPECT_FALSE(std::filesystem::exists(target)) << path;
    }
    // Within range but edited: the digest catches it.
    forged.term = original->header.term + 1;
    std::ofstream(in_place, std::ios::binary | std::ios::trunc)
        << EncodeSnapshotFilePrefix(forged) << original->state
        << EncodeSnapshotFile(original->header, original->state).substr(
               EncodeSnapshotFilePrefix(original->header).size() + original->state.size());
    const CommandResult edited =
        cluster.Cli({"admin", "snapshot", "restore", in_place, "--data-dir", target, "--peers", peers});
    EXPECT_NE(edited.exit_code, 0) << edited.out;
    EXPECT_NE(edited.err.find("damaged or edited"), std::string::npos) << edited.err;
    EXPECT_FALSE(std::filesystem::exists(target));

    // Issue 48: with the verify key, only the file its key signed, unchanged.
    // Edited within range and re-digested, the signature kept: it does not
    // verify. The same state unsigned (format 2), and signed by another key.
    std::string signed_bytes;
    {
      std::ifstream in(file, std::ios::binary);
      signed_bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    std::string body = EncodeSnapshotFilePrefix(forged, 3) + original->state;
    body += Sha256::Of(body);
    const std::string resigned = cluster.dir() + "/resigned.gpoolsnap";
    std::ofstream(resigned, std::ios::binary)
        << body << signed_bytes.substr(signed_bytes.size() - kSnapshotKeyIdChars - kSnapshotSignatureChars);
    const std::string unsigned_copy = cluster.dir() + "/unsigned.gpoolsnap";
    std::ofstream(unsigned_copy, std::ios::binary) << EncodeSnapshotFile(original->header, original->state);
    const std::string other_signed = cluster.dir() + "/other.gpoolsnap";
    const CommandResult saved_other =
        cluster.Cli({"admin", "snapshot", "save", other_signed, "--sign-key", other_prefix + ".key"});
    ASSERT_EQ(saved_other.exit_code, 0) << saved_other.err;
    for (const auto& [path, says] : {std::pair{resigned, std::string("does not verify")},
                                     std::pair{unsigned_copy, std::string("is not signed")},
                                     std::pair{other_signed, std::string("not by the verify key")}}) {
      const CommandResult refused_file = cluster.Cli(
          {"admin", "snapshot", "restore", path, "--data-dir", target, "--peers", peers, "--verify-key", verify_key});
      EXPECT_NE(refused_file.exit_code, 0) << path << ": " << refused_file.out;
      EXPECT_NE(refused_file.err.find(says), std::string::npos) << path << ": " << refused_file.err;
      EXPECT_EQ(refused_file.out.find("restored"), std::string::npos) << refused_file.out;
      EXPECT_FALSE(std::filesystem::exists(target)) << path;
    }
  }

  // The disaster: every replica and its data gone; the workers keep running.
  cluster.KillCoordinator();
  // Two replicas restored verified, one without the key: restored, with a
  // note that its signature was not checked.
  for (int i = 0; i < 3; ++i) {
    cluster.WipeReplica(i);
    std::vector<std::string> args = {"admin", "snapshot", "restore", file, "--data-dir", cluster.ReplicaDataDir(i),
                                     "--peers", peers};
    if (i > 0) args.insert(args.end(), {"--verify-key", verify_key});
    const CommandResult restored = cluster.Cli(args);
    ASSERT_EQ(restored.exit_code, 0) << restored.out << restored.err;
    EXPECT_NE(restored.out.find("a replica of a cluster of 3"), std::string::npos) << restored.out;
    EXPECT_NE(restored.out.find(i > 0 ? "signature verified" : "signature was not verified"), std::string::npos)
        << restored.out;
  }
  cluster.StartCoordinator();
  ASSERT_TRUE(WaitFor([&] { return LeaderIndex(*client) >= 0; }, 30s));

  EXPECT_EQ(JobsOf(*client, ids), saved_jobs);
  auto lost = SettledGetJob(*client, later->job_id);
  EXPECT_EQ(lost.status().code(), StatusCode::kNotFound) << lost.status().ToString();
  const CommandResult queues = SettledCli(cluster, {"queue", "tree"});
  EXPECT_NE(queues.out.find("research"), std::string::npos) << queues.out << queues.err;
  const CommandResult users = SettledCli(cluster, {"admin", "user", "list"});
  EXPECT_NE(users.out.find("alice"), std::string::npos) << users.out;
  Result<ClusterStatusReply> status = Status::Unavailable("not asked");
  ASSERT_TRUE(WaitFor([&] {
    status = client->ClusterStatus();
    return status.ok() && status->role == "leader";
  }, 30s));
  EXPECT_GT(status->term, saved_status->term);

  // The workers rejoin, keep the task that ran on, and take new work from
  // the restored cluster: its term is past anything they saw.
  ASSERT_TRUE(WaitFor([&] { return cluster.AllNodesReady(); }, 30s)) << cluster.Cli({"nodes"}).out;
  auto still_running = SettledGetJob(*client, ids[1]);
  EXPECT_TRUE(still_running.ok() && still_running->summary.state == "Running")
      << (still_running.ok() ? Describe(*still_running) : still_running.status().ToString());
  // A task the restored state does not place is stopped by its worker.
  const std::string stray_exit = "task exited task=" + std::to_string(later_running->job_id) + ".0";
  EXPECT_TRUE(WaitFor([&] { return cluster.worker(0)->Log().find(stray_exit) != std::string::npos ||
                                   cluster.worker(1)->Log().find(stray_exit) != std::string::npos; }, 30s));
  // One idempotency key: a submission resent while leadership settles is one job.
  const std::string key = Client::NewIdempotencyKey();
  auto fresh = Settled([&] { return client->Submit(ShellJob("after-the-restore", 1, "true"), key); });
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_GT(fresh->job_id, later->job_id + 1'000'000) << "an id the old cluster handed out after the save";
  EXPECT_TRUE(WaitFor([&] { return JobIs(*client, fresh->job_id, "Succeeded"); }, 60s))
      << cluster.Cli({"job", std::to_string(fresh->job_id)}).out << [&] {
           const std::string log = cluster.worker(0)->Log();
           return log.substr(log.size() > 8000 ? log.size() - 8000 : 0);
         }();
  // The replicas were restored at different moments and hold one state: the
  // job keeps its id under the next leader.
  const int leader = LeaderIndex(*client);
  ASSERT_GE(leader, 0);
  cluster.KillReplica(leader);
  ASSERT_TRUE(WaitFor([&] { return LeaderIndex(*client) >= 0 && LeaderIndex(*client) != leader; }, 30s));
  auto after_failover = SettledGetJob(*client, fresh->job_id);
  ASSERT_TRUE(after_failover.ok()) << after_failover.status().ToString();
  EXPECT_EQ(after_failover->summary.name, "after-the-restore");
}

}  // namespace
}  // namespace gpool::testing
