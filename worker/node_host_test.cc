// NodeHost alone: what it tells the Link about the node, and what it does
// when a part is absent (no exec manager, no sampler, no health monitor).
#include "worker/node_host.h"

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "worker/runner/testing/fake_process_launcher.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

class NodeHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_.name = "n1";
    node_.cpu_milli = 8000;
    node_.memory_mib = 8192;
    TaskManagerOptions options;
    options.node = node_;
    options.log_dir = dir_.path() + "/tasks";
    options.launcher = &launcher_;
    options.clock = &clock_;
    options.logger = log_.logger();
    tasks_ = std::move(TaskManager::Open(std::move(options)).value());
  }

  NodeSpec node_;
  FakeClock clock_;
  FakeProcessLauncher launcher_;
  testing::TempDir dir_;
  testing::CapturedLog log_;
  std::unique_ptr<TaskManager> tasks_;
};

TEST_F(NodeHostTest, WithOnlyATaskManagerItReportsTheNodeAndServesNoExec) {
  NodeHost host(NodeHostOptions{.tasks = tasks_.get()});
  EXPECT_EQ(host.node().name, "n1");
  EXPECT_TRUE(host.TaskReports().empty());
  Heartbeat heartbeat;
  host.FillStatus(heartbeat);
  EXPECT_TRUE(heartbeat.running.empty());
  EXPECT_TRUE(heartbeat.usage.empty());
  EXPECT_TRUE(heartbeat.gpus.empty());
  EXPECT_EQ(host.health_version(), 0u);
  EXPECT_TRUE(host.health().empty());
  EXPECT_EQ(host.ExecStart(TaskExecStart{}).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(host.ExecPoll(TaskExecPoll{}).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(host.ExecSignal(TaskExecSignal{}).code(), StatusCode::kUnavailable);
  host.RenewLease(1, 2);  // no lease kept: nothing to call
}

TEST_F(NodeHostTest, LeaseRenewalsReachTheCallback) {
  std::vector<std::pair<int64_t, int64_t>> renewed;
  NodeHost host(NodeHostOptions{.tasks = tasks_.get(),
                                .renew_lease = [&](int64_t sent, int64_t lease) { renewed.emplace_back(sent, lease); }});
  host.RenewLease(10, 5000);
  ASSERT_EQ(renewed.size(), 1u);
  EXPECT_EQ(renewed[0], (std::pair<int64_t, int64_t>{10, 5000}));
}

TEST_F(NodeHostTest, ABindGoesToTheTaskManagerAndShowsAsRunning) {
  NodeHost host(NodeHostOptions{.tasks = tasks_.get()});
  BindTask bind;
  bind.task = TaskId{JobId(1), 0, 0};
  bind.command = {"true"};
  ASSERT_TRUE(host.Bind(bind).ok());
  tasks_->Poll();
  Heartbeat heartbeat;
  host.FillStatus(heartbeat);
  ASSERT_EQ(heartbeat.running.size(), 1u);
  EXPECT_EQ(heartbeat.running[0], bind.task);
  EXPECT_FALSE(host.TaskReports().empty());
}

}  // namespace
}  // namespace gpool::worker
