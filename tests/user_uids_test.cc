// Each user its own uid, and state that is the coordinator's alone (issue
// 48, findings 2 and 3), end to end: a real coordinator (its default
// --uid-range, 200000-299999) and a real worker run as root, isolation on.
// Two users created without --uid get different uids from the range; a
// task of one cannot read the other's work dir or log (their owner's uid,
// 0700 and 0600), while it reads its own by the same kind of path. The
// coordinator's data dir is 0700 with no file group or others can read,
// and once made 0755 the coordinator refuses to start on it, naming the fix.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "protocol/messages_users.h"
#include "protocol/security/keys.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

bool Has(const std::string& log, const std::string& line) { return log.find(line + "\n") != std::string::npos; }

// A client that connects with `name`'s key pair (made by the cluster).
std::unique_ptr<Client> ClientAs(LocalCluster& cluster, const std::string& name) {
  ClientOptions options;
  options.endpoints = cluster.client_endpoint();
  cluster.SecureClient(options);
  auto keys = security::ReadSecretKeyFile(cluster.SecretKeyFile(name));
  EXPECT_TRUE(keys.ok()) << keys.status().ToString();
  if (keys.ok()) options.curve_keys = *keys;
  options.timeout_ms = 3000;
  auto connected = Client::Connect(options);
  EXPECT_TRUE(connected.ok()) << connected.status().ToString();
  return connected.ok() ? std::move(connected).value() : nullptr;
}

// Where a task's files are: <worker data dir>/tasks/<job>.0.0{.log,.work}.
std::string TaskPath(LocalCluster& cluster, uint64_t job) {
  return cluster.WorkerDataDir(0) + "/tasks/" + std::to_string(job) + ".0.0";
}

mode_t ModeOf(const std::string& path, uid_t* owner = nullptr) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return 077777;
  if (owner != nullptr) *owner = st.st_uid;
  return st.st_mode & 07777;
}

TEST(UserUidsTest, UsersGetTheirOwnUidsAndTheirTasksCannotReadEachOther) {
  if (geteuid() != 0) GTEST_SKIP() << "the worker runs tasks as their owners' uids only as root";
  LocalClusterOptions options;
  options.workers = 1;
  options.gpus_per_worker = 2;
  options.worker_flags = {{0, {"--gpu-device-nodes", ""}}};
  LocalCluster cluster(options);
  std::unique_ptr<Client> admin;
  ASSERT_NO_FATAL_FAILURE(StartReadyCluster(cluster, admin));

  for (const std::string name : {"alice", "bob"}) {
    auto made = cluster.Cli({"admin", "user", "create", name, "--key", cluster.PublicKeyFile(name)});
    ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
    auto granted = cluster.Cli({"admin", "role", "grant", name, "member", "--queue", "default"});
    ASSERT_EQ(granted.exit_code, 0) << granted.out << granted.err;
  }
  auto users = admin->ListUsers();
  ASSERT_TRUE(users.ok()) << users.status().ToString();
  std::map<std::string, int64_t> uid;
  for (const UserSpec& user : users->users) uid[user.name] = user.uid;
  EXPECT_GE(uid["alice"], 200'000);
  EXPECT_LE(uid["alice"], 299'999);
  EXPECT_GE(uid["bob"], 200'000);
  EXPECT_LE(uid["bob"], 299'999);
  EXPECT_NE(uid["alice"], uid["bob"]);
  // An explicit uid another user holds is refused; so is nobody's.
  auto taken = cluster.Cli({"admin", "user", "create", "eve", "--uid", std::to_string(uid["alice"])});
  EXPECT_NE(taken.exit_code, 0);
  EXPECT_NE(taken.err.find("already belongs to user alice"), std::string::npos) << taken.out << taken.err;
  auto nobody = cluster.Cli({"admin", "user", "create", "eve", "--uid", "65534"});
  EXPECT_NE(nobody.exit_code, 0);
  EXPECT_NE(nobody.err.find("65534 is nobody"), std::string::npos) << nobody.out << nobody.err;

  auto alice = ClientAs(cluster, "alice");
  auto bob = ClientAs(cluster, "bob");
  ASSERT_TRUE(alice && bob);
  auto held = alice->Submit(ShellJob("holder", 1, "echo mine > secret.txt && echo ready && exec sleep 300"), "");
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  const std::string holder = TaskPath(cluster, held->job_id);
  ASSERT_TRUE(WaitFor([&] { return Has(ReadFile(holder + ".log"), "ready"); }, 20s)) << cluster.worker(0)->Log();

  const std::string tasks = cluster.WorkerDataDir(0) + "/tasks";
  const std::string probe =
      "echo uid=$(id -u);"
      "cat " + holder + ".work/secret.txt >/dev/null 2>&1 && echo other-dir=read || echo other-dir=unreachable;"
      "ls " + holder + ".work >/dev/null 2>&1 && echo other-dir=listed || echo other-dir=unlisted;"
      "cat " + holder + ".log >/dev/null 2>&1 && echo other-log=read || echo other-log=unreachable;"
      "echo own > own.txt;"
      "cat " + tasks + "/$GPOOL_JOB_ID.0.0.work/own.txt >/dev/null 2>&1 && echo own-dir=read;"
      "echo probe-done";
  auto probed = bob->Submit(ShellJob("probe", 1, probe), "");
  ASSERT_TRUE(probed.ok()) << probed.status().ToString();
  const std::string prober = TaskPath(cluster, probed->job_id);
  ASSERT_TRUE(WaitFor([&] { return Has(ReadFile(prober + ".log"), "probe-done"); }, 30s)) << cluster.worker(0)->Log();
  const std::string log = ReadFile(prober + ".log");
  EXPECT_TRUE(Has(log, "uid=" + std::to_string(uid["bob"]))) << log;
  EXPECT_TRUE(Has(log, "other-dir=unreachable")) << log;
  EXPECT_TRUE(Has(log, "other-dir=unlisted")) << log;
  EXPECT_TRUE(Has(log, "other-log=unreachable")) << log;
  EXPECT_TRUE(Has(log, "own-dir=read")) << "the same kind of path to its own files works\n" << log;

  // On disk: each task's files are its owner's, private; the dirs above are
  // reachable but not listable.
  uid_t owner = 0;
  EXPECT_EQ(ModeOf(holder + ".work", &owner), 0700u);
  EXPECT_EQ(owner, static_cast<uid_t>(uid["alice"]));
  EXPECT_EQ(ModeOf(holder + ".log", &owner), 0600u);
  EXPECT_EQ(owner, static_cast<uid_t>(uid["alice"]));
  EXPECT_EQ(ModeOf(prober + ".log", &owner), 0600u);
  EXPECT_EQ(owner, static_cast<uid_t>(uid["bob"]));
  EXPECT_EQ(ModeOf(tasks), 0711u);
  EXPECT_EQ(ModeOf(cluster.WorkerDataDir(0)), 0711u);
  (void)alice->CancelJob(JobId(held->job_id), 0);

  // The coordinator's data dir: 0700, and nothing in it group or others can
  // read (looked at once it stopped: LevelDB renames files while it runs).
  cluster.KillCoordinator();
  const std::string data = cluster.ReplicaDataDir(0);
  EXPECT_EQ(ModeOf(data), 0700u);
  size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(data)) {
    ++files;
    EXPECT_EQ(ModeOf(entry.path().string()) & 077, 0u) << entry.path() << " mode " << std::oct << ModeOf(entry.path());
  }
  EXPECT_GT(files, 3u) << "LevelDB's files and the endpoints file were looked at";

  // Made readable by others, it is refused at start (exit 3: not restarted), with the fix.
  ASSERT_EQ(chmod(data.c_str(), 0755), 0);
  cluster.StartReplica(0, /*join=*/false, /*expect_up=*/false);
  Process* refused = cluster.coordinator(0);
  ASSERT_TRUE(WaitFor([&] { return !refused->Running(); }, 20s)) << refused->Log();
  EXPECT_TRUE(WIFEXITED(refused->wait_status()) && WEXITSTATUS(refused->wait_status()) == 3) << refused->Log();
  EXPECT_NE(refused->Log().find("chmod -R go-rwx " + data), std::string::npos) << refused->Log();
}

}  // namespace
}  // namespace gpool::testing
