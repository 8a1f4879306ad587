#include "control/scheduler_driver.h"

#include <gtest/gtest.h>

#include "control/fake_ports.h"

namespace gpool::control {
namespace {

NodeSpec Node(const std::string& name, uint32_t gpus) {
  NodeSpec node;
  node.name = name;
  node.cpu_milli = 16'000;
  node.memory_mib = 65'536;
  for (uint32_t i = 0; i < gpus; ++i) node.gpus.push_back(GpuInfo{.index = i, .uuid = name + "-" + std::to_string(i)});
  return node;
}

JobSpec Job(const std::string& name, uint32_t gpus) {
  JobSpec spec;
  spec.name = name;
  TaskGroupSpec group;
  group.command = {"true"};
  group.resources.gpus = gpus;
  spec.tasks.push_back(group);
  return spec;
}

class SchedulerDriverTest : public ::testing::Test {
 protected:
  state::ClusterState state_;
  ImmediateProposer proposer_{state_};
  SchedulerDriver driver_{SchedulerDriverOptions{}, state_, proposer_};
};

TEST_F(SchedulerDriverTest, PlacesPendingJobsThroughTheLog) {
  proposer_.Propose(state::RegisterNodeCmd{Node("n1", 8), {}}, [](const auto&) {});
  proposer_.Propose(state::SubmitJobCmd{Job("a", 4), ""}, [](const auto&) {});
  proposer_.clear();
  EXPECT_TRUE(driver_.Tick(0));
  EXPECT_EQ(proposer_.proposed(), (std::vector<std::string>{"ApplyPlan"}));
  EXPECT_EQ(state_.FindJob(JobId(1))->state, JobState::kRunning);
  // Nothing changed since: no new cycle, no new entry.
  EXPECT_FALSE(driver_.Tick(100));
}

TEST_F(SchedulerDriverTest, EvictionOnlyPlansReachTheLog) {
  proposer_.Propose(state::RegisterNodeCmd{Node("n1", 2), {}}, [](const auto&) {});
  JobSpec low = Job("low", 2);
  low.priority_class = "low";
  proposer_.Propose(state::SubmitJobCmd{low, ""}, [](const auto&) {});
  EXPECT_TRUE(driver_.Tick(0));
  ASSERT_EQ(state_.FindJob(JobId(1))->state, JobState::kRunning);
  JobSpec high = Job("high", 2);
  high.priority_class = "high";
  proposer_.Propose(state::SubmitJobCmd{high, ""}, [](const auto&) {});
  proposer_.clear();
  driver_.MarkDirty();
  EXPECT_TRUE(driver_.Tick(100));  // no binds, no reasons due yet: the eviction alone is worth an entry
  EXPECT_EQ(proposer_.proposed(), (std::vector<std::string>{"ApplyPlan"}));
  const auto& victim = state_.FindJob(JobId(1))->tasks[0];
  EXPECT_TRUE(victim.stop_requested);
  EXPECT_TRUE(victim.evicted);
  EXPECT_EQ(victim.evicted_for, 2u);
}

TEST_F(SchedulerDriverTest, ReasonOnlyPlansAreCommittedAtMostOncePerInterval) {
  proposer_.Propose(state::RegisterNodeCmd{Node("n1", 8), {}}, [](const auto&) {});
  proposer_.Propose(state::SubmitJobCmd{Job("too-big", 9), ""}, [](const auto&) {});
  proposer_.clear();
  EXPECT_TRUE(driver_.Tick(0));
  ASSERT_FALSE(state_.FindJob(JobId(1))->reasons.empty());
  const auto first = state_.FindJob(JobId(1))->reasons;

  // Capacity changes, so the reasons would change ("1 node" -> "2 nodes").
  proposer_.Propose(state::RegisterNodeCmd{Node("n2", 8), {}}, [](const auto&) {});
  proposer_.clear();
  driver_.MarkDirty();
  EXPECT_FALSE(driver_.Tick(200));  // too soon: deferred
  EXPECT_TRUE(proposer_.proposed().empty());
  EXPECT_EQ(state_.FindJob(JobId(1))->reasons, first);
  EXPECT_FALSE(driver_.Tick(900));
  EXPECT_TRUE(driver_.Tick(1000));  // the interval passed: the new reasons land
  EXPECT_NE(state_.FindJob(JobId(1))->reasons, first);
}

TEST_F(SchedulerDriverTest, BindsAreNeverDeferredByTheReasonsInterval) {
  proposer_.Propose(state::SubmitJobCmd{Job("waits", 1), ""}, [](const auto&) {});
  EXPECT_TRUE(driver_.Tick(0));  // "no nodes registered"
  proposer_.Propose(state::RegisterNodeCmd{Node("n1", 8), {}}, [](const auto&) {});
  driver_.MarkDirty();
  EXPECT_TRUE(driver_.Tick(20));
  EXPECT_EQ(state_.FindJob(JobId(1))->state, JobState::kRunning);
}

}  // namespace
}  // namespace gpool::control
