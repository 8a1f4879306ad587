// Fault tests of the replicated coordinator: three real coordinators and two
// real workers on loopback. A stream of submissions runs while the leader is
// killed (SIGKILL) or paused (SIGSTOP); afterwards every acknowledged
// submission exists exactly once, no GPU is held by two tasks, running tasks
// kept running (same pid), the workers follow the new leader, and the
// replica that was lost catches up when it comes back (by log, or by
// snapshot when it restarts with an empty data dir).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "client/client.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "tests/local_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

constexpr int kReplicas = 3;
// gpool-coordinator's exit status for a replica removed from the replica set
// (control/main.cc, docs/operations.md 3.2).
constexpr int kExitRemoved = 4;

LocalClusterOptions ReplicatedOptions() {
  LocalClusterOptions options;
  options.coordinators = kReplicas;
  options.workers = 2;
  options.gpus_per_worker = 4;
  // Small snapshots intervals so compaction and InstallSnapshot happen.
  // Elections after 1-2 s of silence rather than the default 0.3-0.6 s: on a
  // loaded CI box a leader's fsync or a descheduled loop can stall that long,
  // and an election nobody asked for moves the leader under the test.
  // The node lease is 60 s rather than 20 s: what is tested is that a leader
  // change keeps tasks running, and on a CI box slowed several times over a
  // worker's re-registration can approach 20 s (stop 38's CI run saw the
  // long tasks restarted once; the lease is the one thing that kills them).
  options.coordinator_flags = {"--heartbeat-ms",   "200", "--node-timeout-ms",     "3000", "--preempt-grace-ms", "2000",
                               "--snapshot-every", "40",  "--election-timeout-ms", "1000", "--node-lease-ms",    "60000",
                               "--node-lost-ms",   "90000",  "--snapshot-log-ratio", "0"};
  return options;
}

std::unique_ptr<Client> Connect(const LocalCluster& cluster, const std::string& endpoints, int timeout_ms = 1000) {
  ClientOptions options;
  options.endpoints = endpoints;
  cluster.SecureClient(options);
  options.timeout_ms = timeout_ms;
  options.connect_timeout_ms = 200;
  options.retries = 40;  // enough to ride out an election and a redirect or two
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return std::move(client).value();
}

JobSpec Job(const std::string& name, uint32_t gpus, std::string script) { return ShellJob(name, gpus, std::move(script)); }

int64_t Ms(SteadyClock::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

// Local wall time as milliseconds since midnight, the resolution of the
// coordinators' log timestamps.
int64_t MsOfDayNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm local{};
  localtime_r(&t, &local);
  const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  return ((local.tm_hour * 60 + local.tm_min) * 60 + local.tm_sec) * 1000 + ms;
}

// The time of the last log line containing `what` ("2026-01-02T03:04:05.678 ..."),
// as milliseconds since midnight; -1 if there is none.
int64_t LoggedAtMsOfDay(const std::string& log, const std::string& what) {
  const size_t at = log.rfind(what);
  if (at == std::string::npos) return -1;
  const size_t line = log.rfind('\n', at);
  const size_t start = line == std::string::npos ? 0 : line + 1;
  int h = 0, m = 0, sec = 0, ms = 0;
  if (std::sscanf(log.c_str() + start, "%*4d-%*2d-%*2dT%2d:%2d:%2d.%3d", &h, &m, &sec, &ms) != 4) return -1;
  return ((h * 60 + m) * 60 + sec) * 1000 + ms;
}

// Submits jobs "s-<i>" with idempotency keys "key-<i>" one after another,
// remembering which were acknowledged and when.
class Submitter {
 public:
  // A short reply timeout: a request lost with the leader is retried at the
  // next replica after 500 ms rather than the default 5 s.
  Submitter(const LocalCluster& cluster, std::string endpoints) : client_(Connect(cluster, endpoints, 500)) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Submitter() { Stop(); }

  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  size_t acked() {
    std::lock_guard<std::mutex> lock(mu_);
    return acks_.size();
  }
  // Acknowledged submissions: index -> job id.
  std::map<int, uint64_t> acks() {
    std::lock_guard<std::mutex> lock(mu_);
    return acks_;
  }
  int sent() const { return next_.load(); }
  // First acknowledgement received at or after `t`.
  std::optional<SteadyClock::time_point> FirstAckAfter(SteadyClock::time_point t) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [sent, acked] : times_) {
      if (acked >= t) return acked;
    }
    return std::nullopt;
  }
  std::vector<std::string> failures() {
    std::lock_guard<std::mutex> lock(mu_);
    return failures_;
  }

 private:
  void Loop() {
    while (!stop_) {
      const int i = next_++;
      // Every third job wants a GPU and holds it briefly; the rest are instant.
      JobSpec spec = i % 3 == 0 ? Job("s-" + std::to_string(i), 1, "sleep 0.2") : Job("s-" + std::to_string(i), 0, "true");
      const auto sent = SteadyClock::now();
      auto reply = client_->Submit(spec, "key-" + std::to_string(i));
      std::lock_guard<std::mutex> lock(mu_);
      if (reply.ok()) {
        acks_[i] = reply->job_id;
        times_.emplace_back(sent, SteadyClock::now());
      } else {
        failures_.push_back("s-" + std::to_string(i) + ": " + reply.status().ToString());
      }
      std::this_thread::sleep_for(5ms);
    }
  }

  std::unique_ptr<Client> client_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> next_{0};
  std::mutex mu_;
  std::map<int, uint64_t> acks_;
  std::vector<std::pair<SteadyClock::time_point, SteadyClock::time_point>> times_;
  std::vector<std::string> failures_;
};

class ReplicatedCoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.StartCoordinator();
    cluster_.StartWorkers();
    client_ = Connect(cluster_, cluster_.client_endpoint(), 2000);
    ASSERT_TRUE(WaitFor([&] { return cluster_.AllNodesReady(); }, 30s)) << cluster_.Cli({"nodes"}).out;
  }

  // The leader's view of the cluster (the client follows redirects to it).
  Result<ClusterStatusReply> Status() { return client_->ClusterStatus(); }

  int LeaderIndex() {
    auto status = Status();
    if (!status.ok() || status->role != "leader") return -1;
    return std::stoi(status->replica_id) - 1;
  }

  // Waits until some replica leads and returns it: under load a stalled
  // leader can lose an election at any moment, and for that while no replica
  // answers as leader.
  int AwaitLeader() {
    int leader = -1;
    EXPECT_TRUE(WaitFor(
        [&] {
          leader = LeaderIndex();
          return leader >= 0;
        },
        20s))
        << "no leader";
    return leader;
  }

  // Waits until a leader other than `old` serves, and returns it.
  int AwaitNewLeader(int old) {
    int leader = -1;
    EXPECT_TRUE(WaitFor(
        [&] {
          leader = LeaderIndex();
          return leader >= 0 && leader != old;
        },
        20s))
        << "no new leader after replica " << old + 1 << " was lost";
    return leader;
  }

  // Until the leader reports `replica` has every committed entry.
  // Caught up with what was committed when it came back: under steady
  // submissions the commit index moves on with every batch the other two
  // agree on, so a replica that keeps pace can still read one batch behind
  // the latest one at any instant.
  bool CaughtUp(int replica) {
    uint64_t target = 0;
    if (!WaitFor(
            [&] {
              auto status = Status();
              if (status.ok()) target = status->commit_index;
              return status.ok();
            },
            20s)) {
      return false;
    }
    return WaitFor(
        [&] {
          auto status = Status();
          if (!status.ok()) return false;
          for (const auto& r : status->replicas) {
            if (r.id == std::to_string(replica + 1)) return r.match_index >= target;
          }
          return false;
        },
        20s);
  }

  // Two long-running one-GPU jobs, running; returns their ids.
  std::vector<uint64_t> StartLongJobs() {
    std::vector<uint64_t> ids;
    for (int i = 0; i < 2; ++i) {
      auto reply = client_->Submit(Job("long-" + std::to_string(i), 1, "sleep 600"), "long-key-" + std::to_string(i));
      EXPECT_TRUE(reply.ok()) << reply.status().ToString();
      if (reply.ok()) ids.push_back(reply->job_id);
    }
    for (uint64_t id : ids) {
      EXPECT_TRUE(WaitFor(
          [&] {
            auto job = client_->GetJob(JobId(id));
            return job.ok() && job->summary.state == "Running" && job->tasks.at(0).pid > 0;
          },
          20s))
          << "job " << id << " did not start";
    }
    return ids;
  }

  std::map<uint64_t, int64_t> Pids(const std::vector<uint64_t>& jobs) {
    std::map<uint64_t, int64_t> pids;
    for (uint64_t id : jobs) {
      auto job = client_->GetJob(JobId(id));
      EXPECT_TRUE(job.ok()) << job.status().ToString();
      if (job.ok()) pids[id] = job->tasks.at(0).pid;
    }
    return pids;
  }

  // Every acknowledged submission exists exactly once under its id; nothing
  // was created twice; no GPU is held by two live tasks.
  void CheckInvariants(const std::map<int, uint64_t>& acks, int sent) {
    auto jobs = client_->ListJobs(true, 0);
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    std::map<std::string, std::vector<uint64_t>> by_name;
    for (const auto& job : jobs->jobs) by_name[job.name].push_back(job.job_id);
    for (const auto& [i, id] : acks) {
      const auto& found = by_name["s-" + std::to_string(i)];
      ASSERT_EQ(found.size(), 1u) << "acknowledged submission s-" << i << " exists " << found.size() << " times";
      EXPECT_EQ(found[0], id) << "s-" << i;
    }
    for (const auto& [name, ids] : by_name) EXPECT_EQ(ids.size(), 1u) << name << " was created more than once";
    int created = 0;
    for (int i = 0; i < sent; ++i) created += by_name.count("s-" + std::to_string(i)) ? 1 : 0;
    EXPECT_GE(created, static_cast<int>(acks.size()));

    // Jobs are read one at a time while work goes on, so a GPU can show up
    // under a task that has just finished and under the next one. A real
    // double allocation lasts: every GPU seen twice is read again, and at
    // most one of its holders may still hold it.
    auto holds = [&](uint64_t job_id, const std::string& node, uint32_t gpu) {
      auto job = client_->GetJob(JobId(job_id));
      if (!job.ok()) return false;
      for (const auto& task : job->tasks) {
        if (task.state != "Bound" && task.state != "Running") continue;
        if (task.node != node) continue;
        for (uint32_t g : task.gpu_indices) {
          if (g == gpu) return true;
        }
      }
      return false;
    };
    std::map<std::pair<std::string, uint32_t>, std::vector<uint64_t>> held;
    for (const auto& summary : jobs->jobs) {
      if (summary.state != "Running" && summary.state != "Pending") continue;
      auto job = client_->GetJob(JobId(summary.job_id));
      ASSERT_TRUE(job.ok()) << job.status().ToString();
      for (const auto& task : job->tasks) {
        if (task.state != "Bound" && task.state != "Running") continue;
        for (uint32_t gpu : task.gpu_indices) held[{task.node, gpu}].push_back(summary.job_id);
      }
    }
    for (const auto& [where, holders] : held) {
      if (holders.size() < 2) continue;
      int still = 0;
      for (uint64_t job_id : holders) still += holds(job_id, where.first, where.second) ? 1 : 0;
      EXPECT_LE(still, 1) << "GPU " << where.second << " of " << where.first << " is held by " << still << " jobs";
    }
    auto status = Status();
    ASSERT_TRUE(status.ok());
    EXPECT_LE(status->gpus_used, status->gpus_total);

    // No task ran on two nodes: each worker logs the tasks it started.
    std::map<std::string, int> started_on;
    for (int w = 0; w < 2; ++w) {
      const std::string log = cluster_.worker(w)->Log();
      std::set<std::string> here;
      for (size_t at = log.find("task started task="); at != std::string::npos;
           at = log.find("task started task=", at + 1)) {
        const size_t start = at + std::string("task started task=").size();
        here.insert(log.substr(start, log.find(' ', start) - start));
      }
      for (const auto& task : here) started_on[task] += 1;
    }
    EXPECT_FALSE(started_on.empty()) << "no task start found in the worker logs";
    for (const auto& [task, nodes] : started_on) EXPECT_EQ(nodes, 1) << "task " << task << " ran on two nodes";
  }

  void ExpectStillRunning(const std::map<uint64_t, int64_t>& before) {
    auto after = Pids({before.begin()->first, std::next(before.begin())->first});
    for (const auto& [id, pid] : before) {
      auto job = client_->GetJob(JobId(id));
      ASSERT_TRUE(job.ok());
      EXPECT_EQ(job->summary.state, "Running") << "job " << id;
      EXPECT_EQ(after[id], pid) << "job " << id << " was restarted";
      EXPECT_TRUE(PidAlive(static_cast<pid_t>(pid))) << "job " << id << " pid " << pid;
      if (after[id] != pid) ExplainRestart(id);
    }
  }

  // What a CI log needs to tell why a long task was restarted: the job, its
  // events, its first attempt's log (the supervisor writes why it killed a
  // task there) and the workers' lines about it.
  void ExplainRestart(uint64_t id) {
    const std::string job = std::to_string(id);
    std::cout << "== job " << job << "\n" << cluster_.Cli({"job", job}).out;
    std::cout << "== events of job " << job << "\n" << cluster_.Cli({"events", "--job", job}).out;
    std::cout << "== log of task " << job << ".0\n" << cluster_.Cli({"logs", job}).out;
    const std::string marker = "task=" + job + ".";
    for (int w = 0; w < 2; ++w) {
      std::istringstream lines(cluster_.worker(w)->Log());
      for (std::string line; std::getline(lines, line);) {
        if (line.find(marker) != std::string::npos) std::cout << "worker " << w << ": " << line << "\n";
      }
    }
    for (int r = 0; r < kReplicas; ++r) {
      std::istringstream lines(cluster_.coordinator(r)->Log());
      for (std::string line; std::getline(lines, line);) {
        if (line.find(marker) != std::string::npos || line.find("node=node-") != std::string::npos) {
          std::cout << "replica " << r + 1 << ": " << line << "\n";
        }
      }
    }
  }

  LocalCluster cluster_{ReplicatedOptions()};
  std::unique_ptr<Client> client_;
};

TEST_F(ReplicatedCoordinatorTest, KillingTheLeaderDuringSubmissionsLosesNothing) {
  auto long_jobs = StartLongJobs();
  ASSERT_EQ(long_jobs.size(), 2u);
  const auto pids = Pids(long_jobs);

  Submitter submitter(cluster_, cluster_.client_endpoint());
  for (int round = 0; round < 4; ++round) {
    const size_t before = submitter.acked();
    ASSERT_TRUE(WaitFor([&] { return submitter.acked() >= before + 20; }, 20s)) << "no progress before the kill";
    const int leader = AwaitLeader();
    ASSERT_GE(leader, 0);
    const auto killed_at = SteadyClock::now();
    const int64_t killed_ms_of_day = MsOfDayNow();
    cluster_.KillReplica(leader);
    const int next = AwaitNewLeader(leader);
    ASSERT_TRUE(WaitFor([&] { return submitter.FirstAckAfter(killed_at).has_value(); }, 20s))
        << "no submission acknowledged after the kill";
    const auto first_ack = *submitter.FirstAckAfter(killed_at);
    const int64_t leading_ms_of_day = LoggedAtMsOfDay(cluster_.coordinator(next)->Log(), "leading term=");
    std::cout << "round " << round << ": killed replica " << leader + 1 << "; replica " << next + 1
              << " leads " << (leading_ms_of_day - killed_ms_of_day) << " ms after the kill (its log); first "
              << "acknowledgement " << Ms(first_ack - killed_at) << " ms after the kill (client, 500 ms timeout)\n";
    const size_t after_kill = submitter.acked();
    ASSERT_TRUE(WaitFor([&] { return submitter.acked() >= after_kill + 20; }, 20s)) << "no progress after the kill";

    // The workers found the new leader and their tasks kept running.
    ASSERT_TRUE(WaitFor([&] { return cluster_.AllNodesReady(); }, 20s)) << cluster_.Cli({"nodes"}).out;
    ExpectStillRunning(pids);

    // The lost replica comes back and catches up.
    cluster_.StartReplica(leader);
    EXPECT_TRUE(CaughtUp(leader)) << "replica " << leader + 1 << " did not catch up";
    // After each kill, not only at the end: nothing acknowledged is lost or
    // doubled, no GPU is held twice, no task ran on two nodes.
    // acks first: every index acknowledged by then is below what sent() reads
    // after it (argument evaluation order is unspecified).
    const auto acks = submitter.acks();
    CheckInvariants(acks, submitter.sent());
    if (HasFatalFailure()) return;
  }
  submitter.Stop();
  EXPECT_TRUE(submitter.failures().empty()) << submitter.failures().front();
  CheckInvariants(submitter.acks(), submitter.sent());

  // The CLI, given every endpoint, finds the leader too.
  CommandResult submitted = cluster_.Cli({"submit", "--name", "cli-job", "--idempotency-key", "cli-key", "--", "true"});
  EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
  CommandResult status = cluster_.Cli({"status"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("leader"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("follower"), std::string::npos) << status.out;
}

TEST_F(ReplicatedCoordinatorTest, PausedLeaderIsDeposedAndRejoinsAsFollower) {
  auto long_jobs = StartLongJobs();
  ASSERT_EQ(long_jobs.size(), 2u);
  const auto pids = Pids(long_jobs);
  auto status = Status();
  ASSERT_TRUE(status.ok());
  const uint64_t old_term = status->term;

  Submitter submitter(cluster_, cluster_.client_endpoint());
  ASSERT_TRUE(WaitFor([&] { return submitter.acked() >= 20; }, 20s));
  const int leader = AwaitLeader();
  ASSERT_GE(leader, 0);
  cluster_.coordinator(leader)->Signal(SIGSTOP);
  AwaitNewLeader(leader);
  const size_t after_pause = submitter.acked();
  ASSERT_TRUE(WaitFor([&] { return submitter.acked() >= after_pause + 20; }, 20s));
  cluster_.coordinator(leader)->Signal(SIGCONT);

  // The old leader learns of the new term and follows; it catches up.
  EXPECT_TRUE(CaughtUp(leader));
  // Which replica leads now is not fixed (a later election may move it), but
  // one does; the higher term and the old leader's "stepped down" below show it
  // was deposed.
  EXPECT_GE(AwaitLeader(), 0);
  status = Status();
  ASSERT_TRUE(status.ok());
  EXPECT_GT(status->term, old_term);
  const size_t after_resume = submitter.acked();
  ASSERT_TRUE(WaitFor([&] { return submitter.acked() >= after_resume + 20; }, 20s));
  submitter.Stop();
  EXPECT_TRUE(submitter.failures().empty()) << submitter.failures().front();
  EXPECT_NE(cluster_.coordinator(leader)->Log().find("stepped down"), std::string::npos);

  ASSERT_TRUE(WaitFor([&] { return cluster_.AllNodesReady(); }, 20s)) << cluster_.Cli({"nodes"}).out;
  ExpectStillRunning(pids);
  CheckInvariants(submitter.acks(), submitter.sent());
}

TEST_F(ReplicatedCoordinatorTest, FollowerRestartedWithAnEmptyDataDirCatchesUpBySnapshot) {
  const int leader = AwaitLeader();
  ASSERT_GE(leader, 0);
  const int follower = (leader + 1) % kReplicas;
  cluster_.KillReplica(follower);
  cluster_.WipeReplica(follower);
  // Enough entries that the leader snapshots and compacts (every 40).
  std::map<int, uint64_t> acks;
  for (int i = 0; i < 60; ++i) {
    auto reply = client_->Submit(Job("s-" + std::to_string(i), 0, "true"), "key-" + std::to_string(i));
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    acks[i] = reply->job_id;
  }
  cluster_.StartReplica(follower);
  EXPECT_TRUE(CaughtUp(follower)) << "leader log:\n" << cluster_.coordinator(leader)->Log();
  // The follower acknowledges the snapshot (which is what CaughtUp sees)
  // before it installs it and logs so: wait for the line.
  EXPECT_TRUE(WaitFor(
      [&] { return cluster_.coordinator(follower)->Log().find("state replaced by snapshot") != std::string::npos; },
      10s))
      << cluster_.coordinator(follower)->Log();
  // Issue 49: the leader kept its snapshot as a file and sent it in chunks;
  // the follower reassembled its own copy.
  EXPECT_NE(cluster_.coordinator(leader)->Log().find("kept_as_file=true"), std::string::npos)
      << cluster_.coordinator(leader)->Log();
  EXPECT_NE(cluster_.coordinator(leader)->Log().find("snapshot transfer started to="), std::string::npos)
      << cluster_.coordinator(leader)->Log();
  EXPECT_NE(cluster_.coordinator(follower)->Log().find("snapshot received from="), std::string::npos)
      << cluster_.coordinator(follower)->Log();

  // With the old leader gone the restored replica and the other one form the
  // quorum; whichever leads has every job.
  cluster_.KillReplica(leader);
  AwaitNewLeader(leader);
  CheckInvariants(acks, 60);
}

TEST_F(ReplicatedCoordinatorTest, ReplicasAreAddedAndRemovedWithTheAdminCommands) {
  // A fourth replica, started with --join, is added by the CLI as an
  // operator would: a learner first, promoted to voter by the leader once it
  // has caught up, and then it counts in the quorum.
  const int fourth = cluster_.StartJoiningReplica();
  CommandResult added = cluster_.Cli({"admin", "replica", "add", "4", "--peer-addr", cluster_.peer_endpoint(fourth),
                                      "--client-addr", cluster_.client_endpoint(fourth), "--worker-addr",
                                      cluster_.worker_endpoint(fourth), "--replica-key",
                                      cluster_.PublicKeyFile("replica-4")});
  ASSERT_EQ(added.exit_code, 0) << added.out << added.err;
  EXPECT_NE(added.out.find("added as a learner"), std::string::npos) << added.out;
  EXPECT_NE(added.out.find("voters now 1, 2, 3, learners 4"), std::string::npos) << added.out;
  EXPECT_TRUE(CaughtUp(fourth)) << cluster_.coordinator(fourth)->Log();
  EXPECT_TRUE(WaitFor(
      [&] {
        auto status = Status();
        if (!status.ok()) return false;
        for (const auto& r : status->replicas) {
          if (r.id == "4") return r.role == "follower";
        }
        return false;
      },
      20s))
      << "the learner was never promoted\n" << cluster_.Cli({"admin", "replica", "list"}).out;
  CommandResult again = cluster_.Cli({"admin", "replica", "add", "4", "--peer-addr", cluster_.peer_endpoint(fourth),
                                      "--replica-key", cluster_.PublicKeyFile("replica-4")});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("already a voter"), std::string::npos) << again.err;
  // docs/protocol.md 7.8: adding a member is AlreadyExists whatever else is
  // wrong with the request; the peer probe (Unavailable) and the key check
  // (InvalidArgument) used to answer first.
  for (const std::string& peer : {std::string("tcp://127.0.0.1:1"), cluster_.peer_endpoint(0)}) {
    auto dup = client_->ChangeReplicas(gpool::ChangeReplicas{.op = ReplicaOp::kAdd, .replica_id = 2,
                                                             .peer_address = peer});
    ASSERT_FALSE(dup.ok());
    EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists) << dup.status().ToString();
  }

  // Four voters need three. With one original follower down, a commit
  // needs the new replica's acknowledgement.
  const int leader = AwaitLeader();
  ASSERT_GE(leader, 0);
  const int follower = (leader + 1) % kReplicas;
  cluster_.KillReplica(follower);
  auto job = client_->Submit(Job("with-four", 1, "true"), "with-four");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  cluster_.StartReplica(follower);
  EXPECT_TRUE(CaughtUp(follower));

  // Removing a replica: it is told, stops serving and exits on its own,
  // with the status that tells systemd not to restart it (docs/operations.md
  // 3.2, RestartPreventExitStatus in deploy/systemd/gpool-coordinator.service).
  CommandResult removed = cluster_.Cli({"admin", "replica", "remove", "4"});
  ASSERT_EQ(removed.exit_code, 0) << removed.out << removed.err;
  EXPECT_NE(removed.out.find("voters now 1, 2, 3"), std::string::npos) << removed.out;
  ASSERT_TRUE(WaitFor([&] { return !cluster_.coordinator(fourth)->Running(); }, 10s))
      << cluster_.coordinator(fourth)->Log();
  EXPECT_TRUE(WIFEXITED(cluster_.coordinator(fourth)->wait_status()));
  EXPECT_EQ(WEXITSTATUS(cluster_.coordinator(fourth)->wait_status()), kExitRemoved);

  // Removing the leader: it hands over, exits, and the other two serve.
  CommandResult removed_leader = cluster_.Cli({"admin", "replica", "remove", std::to_string(leader + 1)});
  ASSERT_EQ(removed_leader.exit_code, 0) << removed_leader.out << removed_leader.err << "leader log:\n"
                                         << cluster_.coordinator(leader)->Log();
  ASSERT_TRUE(WaitFor([&] { return !cluster_.coordinator(leader)->Running(); }, 10s))
      << cluster_.coordinator(leader)->Log();
  EXPECT_EQ(WEXITSTATUS(cluster_.coordinator(leader)->wait_status()), kExitRemoved);
  AwaitNewLeader(leader);
  auto status = Status();
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(status->replicas.size(), 2u);
  // Started again by mistake, a removed replica refuses to serve.
  cluster_.StartReplica(leader, /*join=*/false, /*expect_up=*/false);
  ASSERT_TRUE(WaitFor([&] { return !cluster_.coordinator(leader)->Running(); }, 10s));
  EXPECT_NE(cluster_.coordinator(leader)->Log().find("it was removed"), std::string::npos)
      << cluster_.coordinator(leader)->Log();
  EXPECT_TRUE(WIFEXITED(cluster_.coordinator(leader)->wait_status()));
  EXPECT_EQ(WEXITSTATUS(cluster_.coordinator(leader)->wait_status()), kExitRemoved);
  auto after = client_->Submit(Job("with-two", 1, "true"), "with-two");
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_TRUE(WaitFor(
      [&] {
        auto j = client_->GetJob(JobId(after->job_id));
        return j.ok() && j->summary.state == "Succeeded";
      },
      30s))
      << "the two remaining replicas did not run a job";
}

}  // namespace
}  // namespace gpool::testing
