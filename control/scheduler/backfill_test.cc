// Backfill that knows time: jobs with a max_runtime may use nodes held for a
// starving job when they end before those nodes are expected to be free.
#include <gtest/gtest.h>

#include "control/scheduler/scenario.h"

namespace gpool::scheduler {
namespace {

using namespace testing;  // NOLINT: the scenario builders
using topology::ClusterView;

constexpr int64_t kMinute = 60'000;
constexpr int64_t kLongWait = 11 * kMinute;  // past the default starve_after_ms

// n0 and n1 have 6 free GPUs each and are the ones a starving 2x8 gang holds;
// n2 and n3 have 2 free. The tasks on n0 and n1 reach their max_runtime in
// 30 and 20 minutes, so the held nodes are expected free in 30.
ClusterView HeldForThirtyMinutes() {
  ClusterView view;
  for (int n = 0; n < 4; ++n) {
    view.nodes.push_back(MakeNode("n" + std::to_string(n), 8));
    view.running.push_back(Occupy(view, 100 + n, 0, "n" + std::to_string(n), n < 2 ? 2 : 6, "default"));
  }
  view.running[0].remaining_ms = 30 * kMinute;
  view.running[1].remaining_ms = 20 * kMinute;
  view.pending = {JobBuilder(1, "default", 2, 8).Waited(kLongWait)};
  return view;
}

TEST(BackfillTest, AJobThatEndsBeforeTheHeldNodesAreNeededRunsOnThem) {
  ClusterView view = HeldForThirtyMinutes();
  view.pending.push_back(JobBuilder(2, "default", 1, 4).MaxRuntime(25 * kMinute));
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(AnyReasonContains(plan, 1, "nodes are being held for this job"));
  ASSERT_EQ(BindsOf(plan, 2), 1u);
  for (const auto& bind : plan.binds) {
    if (bind.job.value() == 2) {
      EXPECT_TRUE(bind.node == "n0" || bind.node == "n1") << bind.node;
    }
  }
}

TEST(BackfillTest, AJobThatWouldOutliveTheEstimateWaits) {
  ClusterView view = HeldForThirtyMinutes();
  view.pending.push_back(JobBuilder(2, "default", 1, 4).MaxRuntime(31 * kMinute));
  view.pending.push_back(JobBuilder(3, "default", 1, 4));  // no max_runtime: its end is unknown
  Plan plan = Schedule(view, Default());
  EXPECT_EQ(BindsOf(plan, 2), 0u);
  EXPECT_EQ(BindsOf(plan, 3), 0u);
  EXPECT_TRUE(AnyReasonContains(plan, 2, "held for a large waiting job"));
  EXPECT_TRUE(AnyReasonContains(plan, 3, "held for a large waiting job"));
}

TEST(BackfillTest, ATaskWithoutALimitOnTheHeldNodesMakesTheirStartUnknown) {
  // As in Slurm, a task without a limit has no end to estimate from, so the
  // held nodes' start is unknown and a job with a declared runtime cannot
  // delay it: it backfills. (Jobs without one still never do.)
  ClusterView view = HeldForThirtyMinutes();
  view.running[0].remaining_ms = -1;
  view.pending.push_back(JobBuilder(2, "default", 1, 4).MaxRuntime(5 * kMinute));
  Plan plan = Schedule(view, Default());
  EXPECT_EQ(BindsOf(plan, 2), 1u);
}

TEST(BackfillTest, WithoutAHeldNodeTheRuntimeChangesNothing) {
  ClusterView view = HeldForThirtyMinutes();
  view.pending = {JobBuilder(2, "default", 1, 4).MaxRuntime(90 * kMinute), JobBuilder(3, "default", 1, 4)};
  Plan plan = Schedule(view, Default());
  EXPECT_EQ(BindsOf(plan, 2), 1u);
  EXPECT_EQ(BindsOf(plan, 3), 1u);
}

}  // namespace
}  // namespace gpool::scheduler
