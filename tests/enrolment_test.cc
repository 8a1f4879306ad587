// Node enrolment by admission (issue 48, finding 1), on a real CurveZMQ
// cluster: a worker with a key no admin admitted registers as a pending
// enrolment only, is never bound a task and never sees a job's environment,
// until an admin approves it; a join token admits a worker at once, once.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <zmq.hpp>

#include "protocol/envelope.h"
#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"
#include "tests/local_cluster.h"
#include "tests/raw_worker.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kSecret[] = "db-password-4711-do-not-leak";

std::unique_ptr<Client> Connect(const LocalCluster& cluster) {
  ClientOptions options;
  options.endpoints = cluster.client_endpoint();
  cluster.SecureClient(options);
  options.timeout_ms = 3000;
  return std::move(Client::Connect(options).value());
}

// Whether `needle` is in any file under `dir` (a worker's data dir: task
// records, logs, bind files), or in `log`.
bool Leaked(const std::string& dir, const std::string& log, const std::string& needle) {
  if (log.find(needle) != std::string::npos) return true;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::ifstream in(it->path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (text.str().find(needle) != std::string::npos) return true;
  }
  return false;
}

class EnrolmentTest : public ::testing::Test {
 protected:
  std::string NodeState(const std::string& name) {
    auto nodes = client_->ListNodes();
    if (!nodes.ok()) return "?";
    for (const auto& node : nodes->nodes) {
      if (node.name == name) return node.state;
    }
    return "absent";
  }
  std::string JobState(uint64_t job) {
    auto got = client_->GetJob(JobId(job));
    return got.ok() ? got->summary.state : "?";
  }
  std::unique_ptr<Client> client_;
};

// The CLI against one replica only (its endpoint and key), so that what it
// prints is that replica's answer, not whoever a redirect reaches.
CommandResult CliOn(LocalCluster& cluster, int replica, std::vector<std::string> args) {
  std::vector<std::string> argv = {GPOOL_CLI_BIN,
                                   "--coordinator",
                                   cluster.client_endpoint(replica),
                                   "--key-file",
                                   cluster.SecretKeyFile("admin"),
                                   "--coordinator-key",
                                   cluster.PublicKeyFile("replica-" + std::to_string(replica + 1))};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

// node-0 is enrolled by the operator (LocalCluster) and cordoned, so the
// only place the job can go is node-1, a worker with a fresh key. It stays
// pending: not a node, no bind, its environment nowhere on node-1. Once an
// admin approves node-1, the same job runs there.
TEST_F(EnrolmentTest, AStrangerKeyGetsNoWorkAndNoSecretsUntilApproved) {
  LocalClusterOptions options;
  options.workers = 2;
  options.unenrolled_workers = {1};
  // Its retries are logged at debug after the first (the test counts them).
  options.worker_flags[1] = {"--log-level", "debug"};
  LocalCluster cluster(options);
  cluster.StartCoordinator();
  cluster.StartWorker(0);
  client_ = Connect(cluster);
  ASSERT_TRUE(WaitFor([&] { return NodeState("node-0") == "Ready"; }, 30s)) << cluster.Cli({"nodes"}).out;
  ASSERT_EQ(cluster.Cli({"node", "cordon", "node-0"}).exit_code, 0);
  cluster.StartWorker(1);

  // The stranger shows up as a pending enrolment, with its key's fingerprint
  // and the devices it claims, and not as a node.
  CommandResult pending;
  ASSERT_TRUE(WaitFor(
      [&] {
        pending = cluster.Cli({"node", "pending"});
        return pending.out.find("node-1") != std::string::npos;
      },
      30s))
      << pending.out << pending.err << cluster.worker(1)->Log();
  EXPECT_NE(pending.out.find("SHA256:"), std::string::npos) << pending.out;
  EXPECT_NE(pending.out.find("4 x A100-SXM4-80GB"), std::string::npos) << pending.out;
  EXPECT_EQ(NodeState("node-1"), "absent");

  JobSpec spec = ShellJob("secretive", 1, "echo secret=$DB_PASSWORD");
  spec.tasks[0].env["DB_PASSWORD"] = kSecret;
  auto submitted = client_->Submit(spec, "");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  const uint64_t job = submitted->job_id;
  // Wait until the scheduler has looked at the job (it records why it is
  // pending) and the stranger has tried to register again since: had either
  // let the job reach node-1, it would be bound by then.
  const auto refusals = [&] {
    const std::string log = cluster.worker(1)->Log();
    size_t count = 0;
    for (size_t at = log.find("awaits admission"); at != std::string::npos; at = log.find("awaits admission", at + 1)) {
      ++count;
    }
    return count;
  };
  const size_t refused_before = refusals();
  ASSERT_TRUE(WaitFor(
      [&] {
        auto got = client_->GetJob(JobId(job));
        return got.ok() && !got->summary.reason.empty() && refusals() > refused_before;
      },
      30s))
      << cluster.Cli({"job", std::to_string(job)}).out << cluster.worker(1)->Log();
  EXPECT_EQ(JobState(job), "Pending") << cluster.Cli({"job", std::to_string(job)}).out;
  EXPECT_EQ(NodeState("node-1"), "absent");
  EXPECT_FALSE(Leaked(cluster.WorkerDataDir(1), cluster.worker(1)->Log(), kSecret));

  // The admin's approval binds the key to the name; the worker's next
  // registration attempt is admitted and the job goes there.
  CommandResult approved = cluster.Cli({"node", "approve", "node-1"});
  ASSERT_EQ(approved.exit_code, 0) << approved.err;
  EXPECT_NE(approved.out.find("approved"), std::string::npos) << approved.out;
  ASSERT_TRUE(WaitFor([&] { return JobState(job) == "Succeeded"; }, 30s))
      << JobState(job) << cluster.worker(1)->Log();
  auto got = client_->GetJob(JobId(job));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->tasks[0].node, "node-1");
  auto log = client_->GetTaskLog(JobId(job), 0, 4096);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_NE(log->data.find(std::string("secret=") + kSecret), std::string::npos) << log->data;
  EXPECT_EQ(cluster.Cli({"node", "pending"}).out.find("node-1"), std::string::npos);
}

// A pending enrolment is replicated state (issue 48): after the leader that
// saw the stranger register is killed, the new leader lists it and an admin
// approves it there, and the worker becomes a Ready node that runs a job.
// The worker is frozen (SIGSTOP) across the leader change, so it cannot
// register again with the new leader: only the replicated entry can put it
// in the new leader's list.
TEST_F(EnrolmentTest, APendingEnrolmentOutlivesALeaderChangeAndIsApprovedOnTheNewLeader) {
  LocalClusterOptions options;
  options.coordinators = 3;
  options.workers = 1;
  options.unenrolled_workers = {0};
  options.coordinator_flags.insert(options.coordinator_flags.end(), {"--worker-enrolment", "admission"});
  LocalCluster cluster(options);
  cluster.StartCoordinator();
  client_ = Connect(cluster);
  int leader = -1;
  ASSERT_TRUE(WaitFor([&] { return (leader = LeaderIndex(*client_)) >= 0; }, 30s));
  cluster.StartWorker(0);

  CommandResult pending;
  ASSERT_TRUE(WaitFor(
      [&] {
        pending = CliOn(cluster, leader, {"node", "pending"});
        return pending.out.find("node-0") != std::string::npos;
      },
      30s))
      << pending.out << pending.err << cluster.worker(0)->Log();
  const size_t fingerprint_at = pending.out.find("SHA256:");
  ASSERT_NE(fingerprint_at, std::string::npos) << pending.out;
  const std::string fingerprint =
      pending.out.substr(fingerprint_at, pending.out.find_first_of(" \t\n", fingerprint_at) - fingerprint_at);
  EXPECT_EQ(NodeState("node-0"), "absent");

  // Freeze the worker, then kill the leader by its pid.
  cluster.worker(0)->Signal(SIGSTOP);
  struct Thaw {
    Process* worker;
    ~Thaw() { worker->Signal(SIGCONT); }
  } thaw{cluster.worker(0)};
  const pid_t leader_pid = cluster.coordinator(leader)->pid();
  cluster.KillReplica(leader);
  EXPECT_FALSE(PidAlive(leader_pid));
  int next = -1;
  ASSERT_TRUE(WaitFor(
      [&] {
        next = LeaderIndex(*client_);
        return next >= 0 && next != leader;
      },
      30s));

  // The new leader lists the same key, never having heard from the worker.
  CommandResult listed = CliOn(cluster, next, {"node", "pending"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("node-0"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find(fingerprint), std::string::npos) << fingerprint << " in\n" << listed.out;
  CommandResult approved = CliOn(cluster, next, {"node", "approve", "node-0"});
  ASSERT_EQ(approved.exit_code, 0) << approved.out << approved.err;
  EXPECT_NE(approved.out.find("approved"), std::string::npos) << approved.out;
  EXPECT_EQ(CliOn(cluster, next, {"node", "pending"}).out.find("node-0"), std::string::npos);
  // The approval is in the audit stream (docs/operations.md 2.3).
  const CommandResult audit = CliOn(cluster, next, {"audit"});
  ASSERT_EQ(audit.exit_code, 0) << audit.err;
  bool audited = false;
  std::istringstream lines(audit.out);
  for (std::string line; std::getline(lines, line);) {
    audited = audited || (line.find("enrolment approve node-0") != std::string::npos &&
                          line.find("succeeded") != std::string::npos);
  }
  EXPECT_TRUE(audited) << audit.out;

  // Thawed, the worker registers with the new leader on its approved key.
  cluster.worker(0)->Signal(SIGCONT);
  ASSERT_TRUE(WaitFor([&] { return NodeState("node-0") == "Ready"; }, 30s))
      << cluster.Cli({"nodes"}).out << cluster.worker(0)->Log();
  auto submitted = client_->Submit(ShellJob("after-approval", 1, "echo ran-on-approved-node"), "");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  const uint64_t job = submitted->job_id;
  ASSERT_TRUE(WaitFor([&] { return JobState(job) == "Succeeded"; }, 30s))
      << JobState(job) << cluster.Cli({"job", std::to_string(job)}).out << cluster.worker(0)->Log();
  auto got = client_->GetJob(JobId(job));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->tasks[0].node, "node-0");
}

// A join token admits the worker that presents it at once, with the token's
// labels; the same token is refused to the next key, as is a made-up one.
TEST_F(EnrolmentTest, AJoinTokenAdmitsOneNodeAtOnceAndOnlyOnce) {
  LocalClusterOptions options;
  options.workers = 1;
  options.unenrolled_workers = {0};
  LocalCluster cluster(options);
  cluster.StartCoordinator();
  client_ = Connect(cluster);
  CommandResult created = cluster.Cli({"admin", "join-token", "create", "--ttl", "1h", "--labels", "rack=r7"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const std::string token = created.out.substr(0, created.out.find('\n'));
  ASSERT_EQ(token.rfind("gpool-join-", 0), 0u) << created.out;

  cluster.SetWorkerEnv(0, {{"GPOOL_JOIN_TOKEN", token}});
  cluster.StartWorker(0);
  ASSERT_TRUE(WaitFor([&] { return NodeState("node-0") == "Ready"; }, 30s)) << cluster.worker(0)->Log();
  auto nodes = client_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->nodes.size(), 1u);
  EXPECT_EQ(nodes->nodes[0].labels["rack"], "r7");
  EXPECT_EQ(cluster.Cli({"node", "pending"}).out.find("node-0"), std::string::npos);

  RawWorker second(cluster, "second-key");
  RegisterNode again{FakeNode("node-9", 8), {}, "test"};
  again.join_token = token;
  auto refused = second.Ask(again);
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  ASSERT_EQ(refused->type(), MessageType::kErrorReply);
  EXPECT_EQ(refused->Body<ErrorReply>()->code, "Unauthenticated");
  EXPECT_NE(refused->Body<ErrorReply>()->message.find("already used"), std::string::npos)
      << refused->Body<ErrorReply>()->message;
  again.join_token = "gpool-join-made-up";
  auto unknown = second.Ask(again);
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->Body<ErrorReply>()->code, "Unauthenticated");
  EXPECT_EQ(NodeState("node-9"), "absent");

  CommandResult list = cluster.Cli({"admin", "join-token", "list"});
  EXPECT_NE(list.out.find("used by node-0"), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find(token), std::string::npos) << "a listing never shows the token";
}

}  // namespace
}  // namespace gpool::testing
