// The at-most-one-copy rule across a node loss (docs/architecture.md, "Node
// loss"): a worker killed with SIGKILL while a gang job runs leaves its task
// to its supervisor, which kills it when the node's lease runs out; only
// after the node-loss grace does the coordinator requeue the job, whole, as
// its next attempt on other nodes. The worker that returns later restarts
// nothing of the old attempt and takes new work. Checked throughout: no
// process of an attempt runs once the next one has started, and no GPU is
// held twice.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;


constexpr int64_t kLeaseMs = 2000;
constexpr int64_t kLostMs = 7000;

class NodeLeaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TaskCgroupsAvailable()) {
      GTEST_SKIP() << "task cgroups need root and a cgroup hierarchy";
    }
    LocalClusterOptions options;
    options.workers = 3;
    options.gpus_per_worker = 4;
    options.coordinator_flags = {"--heartbeat-ms",  "200",  "--node-timeout-ms", "1000",
                                 "--node-lease-ms", std::to_string(kLeaseMs), "--node-lost-ms",
                                 std::to_string(kLostMs), "--preempt-grace-ms", "1000"};
    cluster_ = std::make_unique<LocalCluster>(options);
    // The client's default wait (5 s), not the helper's shorter one.
    ASSERT_NO_FATAL_FAILURE(StartReadyCluster(*cluster_, client_, ClientOptions{}.timeout_ms));
  }
  void TearDown() override {
    for (int64_t pid : seen_) kill(static_cast<pid_t>(pid), SIGKILL);
  }

  Result<GetJobReply> Job(JobId id) { return client_->GetJob(id); }
  int WorkerIndex(const std::string& node) {
    for (int i = 0; i < 3; ++i) {
      if (cluster_->NodeName(i) == node) return i;
    }
    return -1;
  }
  // No GPU of any node is held by two tasks, as the coordinator reports them.
  void ExpectNoGpuHeldTwice() {
    auto nodes = client_->ListNodes(/*devices=*/true);
    ASSERT_TRUE(nodes.ok());
    for (const auto& node : nodes->nodes) {
      for (const auto& device : node.devices) EXPECT_LE(device.tenants.size(), device.task.empty() ? 1u : 0u);
    }
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
  std::vector<int64_t> seen_;
};

TEST_F(NodeLeaseTest, AGangOnAKilledWorkerIsKilledByTheLeaseThenRequeuedWholeElsewhere) {
  // Two tasks of four GPUs each: a gang over two of the three nodes.
  JobSpec spec = ShellJob("gang", 4, "exec sleep 1000", 2);
  auto job = client_->Submit(spec, "");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const JobId id(job->job_id);
  Result<GetJobReply> first = Job(id);
  ASSERT_TRUE(WaitFor(
      [&] {
        first = Job(id);
        return first.ok() && first->tasks[0].state == "Running" && first->tasks[1].state == "Running";
      },
      30s));
  const std::string lost_node = first->tasks[0].node;
  const int64_t lost_pid = first->tasks[0].pid;
  const int64_t partner_pid = first->tasks[1].pid;
  seen_ = {lost_pid, partner_pid};
  const int lost = WorkerIndex(lost_node);
  ASSERT_GE(lost, 0);

  const auto killed_at = SteadyClock::now();
  cluster_->worker(lost)->Kill();
  // The task outlives its worker under its supervisor, but not its lease.
  EXPECT_TRUE(StillRunning(lost_pid));
  ASSERT_TRUE(WaitFor([&] { return !StillRunning(lost_pid); }, std::chrono::milliseconds(kLeaseMs + 5000)));
  const auto died_at = SteadyClock::now();
  // Nothing is requeued before the grace: the job still counts its task as
  // running on the silent node, so its GPUs are not given out.
  auto during = Job(id);
  ASSERT_TRUE(during.ok());
  EXPECT_EQ(during->tasks[0].attempt, 0u);
  EXPECT_EQ(during->tasks[0].node, lost_node);

  // Then the whole gang comes back as attempt 1, on the two other nodes.
  Result<GetJobReply> again = Job(id);
  ASSERT_TRUE(WaitFor(
      [&] {
        again = Job(id);
        return again.ok() && again->tasks[0].attempt == 1 && again->tasks[1].attempt == 1 &&
               again->tasks[0].state == "Running" && again->tasks[1].state == "Running";
      },
      std::chrono::milliseconds(kLostMs + 30'000)));
  const auto requeued_at = SteadyClock::now();
  EXPECT_GE(requeued_at - killed_at, std::chrono::milliseconds(kLostMs - 1000));
  EXPECT_LT(died_at, requeued_at);
  EXPECT_NE(again->tasks[0].node, lost_node);
  EXPECT_NE(again->tasks[1].node, lost_node);
  EXPECT_FALSE(StillRunning(lost_pid));
  EXPECT_FALSE(StillRunning(partner_pid)) << "the gang's other task was requeued with it";
  seen_.push_back(again->tasks[0].pid);
  seen_.push_back(again->tasks[1].pid);
  EXPECT_EQ(again->summary.restarts, 1u);
  ExpectNoGpuHeldTwice();

  // The node returns: nothing of attempt 0 runs again, and it takes new work.
  cluster_->StartWorker(lost);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto nodes = client_->ListNodes();
        if (!nodes.ok()) return false;
        for (const auto& n : nodes->nodes) {
          if (n.name == lost_node) return n.state == "Ready";
        }
        return false;
      },
      30s));
  JobSpec next = ShellJob("next", 4, "true");
  next.node_selector = {{"gpool.io/node", lost_node}};
  auto submitted = client_->Submit(next, "");
  ASSERT_TRUE(submitted.ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        auto detail = Job(JobId(submitted->job_id));
        return detail.ok() && detail->summary.state == "Succeeded";
      },
      30s));
  auto still = Job(id);
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->tasks[0].attempt, 1u);
  EXPECT_EQ(still->summary.state, "Running");
  EXPECT_FALSE(StillRunning(lost_pid));
  ExpectNoGpuHeldTwice();

  // The event stream tells the story.
  ListEvents request;
  request.job = id.value();
  request.limit = 1000;
  auto events = client_->ListEvents(request);
  ASSERT_TRUE(events.ok());
  std::set<std::string> kinds;
  for (const auto& e : events->events) kinds.insert(e.kind);
  EXPECT_TRUE(kinds.count("task-lost"));
  EXPECT_TRUE(kinds.count("task-requeued"));
}

}  // namespace
}  // namespace gpool::testing
