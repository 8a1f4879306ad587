// Node key rotation without downtime (issue 48), on a real CurveZMQ cluster:
// an admin rotates a running node's key with a grace
// (`gpool admin node enrol node-0 --node-key new.pub --grace 4s`); the worker,
// still on its old key, stays Ready and its heartbeats keep being taken; the
// worker restarted with the new key re-registers and adopts its running
// task; once the grace has ended a worker with the old key is refused at
// registration and the node stays the new key's.
#include <signal.h>

#include <chrono>
#include <filesystem>

#include <gtest/gtest.h>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "tests/local_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class KeyRotationTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (task_pid_ > 0) kill(static_cast<pid_t>(task_pid_), SIGKILL);
  }
  const NodeSummary* Node(const ListNodesReply& nodes, const std::string& name) {
    for (const auto& node : nodes.nodes) {
      if (node.name == name) return &node;
    }
    return nullptr;
  }
  // Whether node-0 is Ready and its coordinator took a frame from it at or after wall time `since_ms`.
  bool HeardFrom(int64_t since_ms) {
    auto nodes = client_->ListNodes();
    if (!nodes.ok()) return false;
    const NodeSummary* node = Node(*nodes, "node-0");
    return node != nullptr && node->state == "Ready" && node->last_seen_ms >= since_ms;
  }
  std::string TaskState(JobId job, int64_t* pid = nullptr) {
    auto detail = client_->GetJob(job);
    if (!detail.ok() || detail->tasks.empty()) return "?";
    if (pid != nullptr) *pid = detail->tasks[0].pid;
    return detail->tasks[0].state;
  }

  std::unique_ptr<Client> client_;
  int64_t task_pid_ = 0;
};

TEST_F(KeyRotationTest, ARotatedNodeStaysReadyAndTheOldKeyIsRefusedAfterTheGrace) {
  LocalClusterOptions options;
  options.workers = 1;
  // The task's pid is followed on the host; isolation is task_isolation_test's.
  options.worker_flags = {{0, {"--task-isolation", "off"}}};
  LocalCluster cluster(options);
  cluster.StartCoordinator();
  cluster.StartWorkers();
  ASSERT_TRUE(WaitFor([&] { return cluster.AllNodesReady(); }, 30s));
  ClientOptions client_options;
  client_options.endpoints = cluster.client_endpoint();
  cluster.SecureClient(client_options);
  client_options.timeout_ms = 3000;
  auto connected = Client::Connect(client_options);
  ASSERT_TRUE(connected.ok()) << connected.status().ToString();
  client_ = std::move(connected).value();

  JobSpec spec = ShellJob("rotating", 1, "while true; do sleep 0.1; done");
  spec.restart.policy = "never";
  auto submitted = client_->Submit(spec, "");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  const JobId job(submitted->job_id);
  ASSERT_TRUE(WaitFor([&] { return TaskState(job, &task_pid_) == "Running" && task_pid_ > 0; }, 20s));
  const int64_t pid = task_pid_;

  // The admin makes the new key and rotates with a grace.
  const std::string new_prefix = cluster.dir() + "/node-0-new";
  ASSERT_EQ(cluster.Cli({"admin", "keygen", "--out", new_prefix}).exit_code, 0);
  const std::string key_file = cluster.SecretKeyFile("node-0");
  const std::string old_copy = cluster.dir() + "/node-0-old.key";
  std::filesystem::copy_file(key_file, old_copy);
  constexpr int64_t kGraceMs = 4000;
  auto rotated = cluster.Cli({"admin", "node", "enrol", "node-0", "--node-key", new_prefix + ".pub", "--grace", "4s"});
  ASSERT_EQ(rotated.exit_code, 0) << rotated.err;
  // The command's time (the deadline's origin) is no later than this.
  const int64_t rotated_ms = WallMs();

  // During the grace the worker on the old key is still the node: its
  // heartbeats (every 200 ms) keep being taken well after the rotation, and
  // its task runs. Without a grace they are refused from the rotation on.
  ASSERT_TRUE(WaitFor([&] { return HeardFrom(rotated_ms + 1500); }, std::chrono::milliseconds(kGraceMs - 500)))
      << cluster.Cli({"nodes"}).out << cluster.coordinator(0)->Log();
  EXPECT_EQ(TaskState(job), "Running");

  // The operator moves the worker to the new key: its restart re-registers
  // under the new key and adopts the running task.
  cluster.worker(0)->Kill();
  std::filesystem::copy_file(new_prefix + ".key", key_file, std::filesystem::copy_options::overwrite_existing);
  const int64_t restarted_ms = WallMs();
  cluster.StartWorker(0);
  ASSERT_TRUE(WaitFor([&] { return HeardFrom(restarted_ms + 500); }, 15s)) << cluster.worker(0)->Log();
  int64_t adopted_pid = 0;
  EXPECT_EQ(TaskState(job, &adopted_pid), "Running");
  EXPECT_EQ(adopted_pid, pid) << "the restarted worker adopts its task, not a new start";

  // After the grace: a worker with the old key is refused at registration
  // (no log entry ended the grace; the clock did).
  ASSERT_TRUE(WaitFor([&] { return WallMs() > rotated_ms + kGraceMs + 200; }, std::chrono::milliseconds(kGraceMs + 1000)));
  cluster.worker(0)->Kill();
  std::filesystem::copy_file(old_copy, key_file, std::filesystem::copy_options::overwrite_existing);
  const size_t log_before = cluster.coordinator(0)->Log().size();  // only what this worker causes counts
  cluster.StartWorker(0);
  EXPECT_TRUE(WaitFor(
      [&] {
        // "... grace has ended", or "bound to another worker key" once a
        // registration after the deadline has dropped the retired key.
        return cluster.coordinator(0)->Log().find("node registration refused node=node-0", log_before) !=
               std::string::npos;
      },
      15s))
      << cluster.worker(0)->Log();
  // The refused key changed nothing: the task is still the node's, running.
  EXPECT_EQ(TaskState(job), "Running");
  cluster.worker(0)->Kill();
}

}  // namespace
}  // namespace gpool::testing
