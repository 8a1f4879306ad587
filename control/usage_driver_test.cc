#include "control/usage_driver.h"

#include <gtest/gtest.h>

#include "control/testing/fake_ports.h"
#include "protocol/base/testing/fake_clock.h"

namespace gpool::control {
namespace {

NodeSpec Node() {
  NodeSpec node;
  node.name = "n1";
  node.cpu_milli = 8000;
  node.memory_mib = 8192;
  node.gpus.push_back(GpuInfo{.index = 0, .uuid = "GPU-0", .model = "A100"});
  return node;
}

class UsageDriverTest : public ::testing::Test {
 protected:
  // A task running on n1 (all at the ImmediateProposer's wall time).
  void RunOne() {
    proposer_.Propose(state::RegisterNodeCmd{Node(), {}}, [](const auto&) {});
    JobSpec spec;
    spec.name = "j";
    spec.tasks.push_back(TaskGroupSpec{.command = {"true"}, .resources = Resources{1, 0, 0}});
    proposer_.Propose(state::SubmitJobCmd{spec, ""}, [](const auto&) {});
    proposer_.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(1), 0, "n1", {0}, 0, 0}}, {}}, [](const auto&) {});
  }

  state::ClusterState state_;
  ImmediateProposer proposer_{state_};
  FakeClock clock_{1'000'000};
};

TEST_F(UsageDriverTest, CheckpointsOnlyWhileWorkRunsAndAtMostEveryInterval) {
  UsageDriver driver(UsageOptions{.checkpoint_every_ms = 60'000}, state_, proposer_, &clock_);
  driver.Tick(0);  // nothing runs: nothing to vouch for
  EXPECT_TRUE(proposer_.proposed().empty());
  RunOne();
  proposer_.clear();
  driver.Tick(30'000);  // within the interval of the last look
  EXPECT_TRUE(proposer_.proposed().empty());
  driver.Tick(60'000);
  EXPECT_EQ(proposer_.proposed(), std::vector<std::string>{"UsageCheckpoint"});
  EXPECT_EQ(state_.usage_ledger().checkpoint_ms(), 1'000'000);  // the command's (proposer's) time
  driver.Tick(90'000);
  EXPECT_EQ(proposer_.proposed().size(), 1u);
  driver.Reset();  // a new leadership looks at once
  driver.Tick(90'001);
  EXPECT_EQ(proposer_.proposed().size(), 2u);
}

TEST_F(UsageDriverTest, ZeroIntervalNeverCheckpoints) {
  RunOne();
  proposer_.clear();
  UsageDriver driver(UsageOptions{.checkpoint_every_ms = 0}, state_, proposer_, &clock_);
  driver.Tick(1'000'000);
  EXPECT_TRUE(proposer_.proposed().empty());
}

TEST_F(UsageDriverTest, AnIdleClusterStillTrimsRollupsPastTheirWindows) {
  RunOne();
  TaskEvent exited;
  exited.node = "n1";
  exited.task = TaskId{JobId(1), 0, 0};
  exited.kind = TaskEventKind::kStarted;
  exited.pid = 42;
  exited.time_ms = 1'000'000;
  proposer_.Propose(state::TaskEventCmd{exited}, [](const auto&) {});
  exited.kind = TaskEventKind::kExited;
  proposer_.Propose(state::TaskEventCmd{exited}, [](const auto&) {});
  ASSERT_EQ(state_.active_task_count(), 0u);
  ASSERT_EQ(state_.usage_ledger().daily_rows(), 1u);
  proposer_.clear();
  const UsageOptions options{.checkpoint_every_ms = 60'000,
                             .keep_hourly_ms = int64_t{2} * state::kDayMs,
                             .keep_daily_ms = int64_t{10} * state::kDayMs};
  UsageDriver driver(options, state_, proposer_, &clock_);
  driver.Tick(0);  // the rollups are fresh: nothing to do
  EXPECT_TRUE(proposer_.proposed().empty());
  clock_.Advance(3 * state::kDayMs);  // the hours aged out, not the day
  driver.Tick(60'000);
  ASSERT_EQ(proposer_.proposed(), std::vector<std::string>{"UsageCheckpoint"});
  EXPECT_EQ(state_.usage_ledger().hourly_rows(), 0u);
  EXPECT_EQ(state_.usage_ledger().daily_rows(), 1u);
  driver.Tick(120'000);  // nothing more is due
  EXPECT_EQ(proposer_.proposed().size(), 1u);
  clock_.Advance(9 * state::kDayMs);
  driver.Tick(180'000);
  EXPECT_EQ(proposer_.proposed().size(), 2u);
  EXPECT_EQ(state_.usage_ledger().daily_rows(), 0u);
}

}  // namespace
}  // namespace gpool::control
