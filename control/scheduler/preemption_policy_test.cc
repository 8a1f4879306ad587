// Scenario tests of a queue's preemption policy (QueueSpec.preempting_classes
// and low_reclaimable, issue 50) and of reclaim's floor (lender_room.h):
// what each policy lets go, and that the defaults are the class rule.
#include <gtest/gtest.h>

#include "control/scheduler/scenario.h"

namespace gpool::scheduler {
namespace {

using namespace testing;  // NOLINT: the scenario builders
using topology::ClusterView;
using topology::PriorityClass;

constexpr auto kSystemClass = PriorityClass::kSystem;

// One 4-GPU node full of a's low work, and a job of class `cls` of a's own
// waiting for all of it.
ClusterView OwnLowWorkAndA(PriorityClass cls, std::vector<PriorityClass> preempting) {
  ClusterView view;
  view.nodes = {MakeNode("n0", 4)};
  view.queues = {MakeQueue("a", "root")};
  view.queues[0].preempting_classes = std::move(preempting);
  view.running = {Occupy(view, 1, 0, "n0", 4, "a", kLow, 1)};
  view.pending = {JobBuilder(2, "a", 1, 4).Class(cls)};
  return view;
}

TEST(QueuePolicyTest, DefaultLetsHighAndSystemPreempt) {
  for (PriorityClass cls : {kHigh, kSystemClass}) {
    Plan plan = Schedule(OwnLowWorkAndA(cls, {kHigh, kSystemClass}), Default());
    EXPECT_EQ(Evicted(plan), (std::vector<std::pair<uint64_t, uint32_t>>{{1, 0}})) << ToString(cls);
  }
}

TEST(QueuePolicyTest, PreemptingClassesNarrowWhoMayPreempt) {
  // Only system: a high job waits.
  EXPECT_TRUE(Schedule(OwnLowWorkAndA(kHigh, {kSystemClass}), Default()).evictions.empty());
  EXPECT_EQ(Schedule(OwnLowWorkAndA(kSystemClass, {kSystemClass}), Default()).evictions.size(), 1u);
  // Only high: a system job waits.
  EXPECT_EQ(Schedule(OwnLowWorkAndA(kHigh, {kHigh}), Default()).evictions.size(), 1u);
  EXPECT_TRUE(Schedule(OwnLowWorkAndA(kSystemClass, {kHigh}), Default()).evictions.empty());
  // None: nobody preempts.
  for (PriorityClass cls : {kHigh, kSystemClass}) {
    EXPECT_TRUE(Schedule(OwnLowWorkAndA(cls, {}), Default()).evictions.empty()) << ToString(cls);
  }
}

TEST(QueuePolicyTest, PolicyNeverWidensTheClassRule) {
  // Listing medium (which validation refuses at the edge) lets no medium job
  // preempt: the class rule still holds.
  EXPECT_TRUE(Schedule(OwnLowWorkAndA(PriorityClass::kMedium, {PriorityClass::kMedium, kHigh}), Default())
                  .evictions.empty());
}

TEST(QueuePolicyTest, LowWorkOfAQueueThatForbidsReclaimIsKept) {
  // a holds 8 of low work over its deserved 4 (its policy changed after it
  // borrowed): b waits rather than take it.
  ClusterView view = TwoTeams(1, 8, 4);
  view.running = {Occupy(view, 1, 0, "n0", 4, "a", kLow, 1), Occupy(view, 2, 0, "n0", 4, "a", kLow, 2)};
  view.pending = {JobBuilder(3, "b", 1, 2)};
  EXPECT_EQ(Evicted(Schedule(view, Default())), (std::vector<std::pair<uint64_t, uint32_t>>{{2, 0}}));
  view.queues[0].low_reclaimable = false;
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.evictions.empty());
  EXPECT_EQ(BindsOf(plan, 3), 0u);
  // Its own high jobs may still preempt it: the policy is about other queues.
  view.pending = {JobBuilder(4, "a", 1, 4).Class(kHigh)};
  view.queues[0].deserved = {{"gpu", 8}};
  EXPECT_EQ(Schedule(view, Default()).evictions.size(), 1u);
}

TEST(QueuePolicyTest, LowWorkThatMayNotBeReclaimedDoesNotBorrow) {
  // What nobody may take back must stay within the deserved share, elastic
  // replicas above the minimum included.
  ClusterView view = TwoTeams(1, 8, 4);
  view.queues[0].low_reclaimable = false;
  view.pending = {JobBuilder(1, "a", 1, 6).Class(kLow)};
  Plan plan = Schedule(view, Default());
  EXPECT_EQ(BindsOf(plan, 1), 0u);
  EXPECT_TRUE(AnyReasonContains(plan, 1, "queue a holds its deserved gpu"));
  view.pending = {JobBuilder(1, "a", 6, 1).Class(kLow).Min(2)};
  EXPECT_EQ(BindsOf(Schedule(view, Default()), 1), 4u);
  // By default the same job borrows the idle GPUs.
  view.queues[0].low_reclaimable = true;
  EXPECT_EQ(BindsOf(Schedule(view, Default()), 1), 6u);
}

// --- Reclaim's floor ---------------------------------------------------------------

TEST(LenderFloorTest, ALeafWithinItsDeservedLendsNothingThoughItsParentDoes) {
  // org-b holds 8 over its deserved 4, all of it in b2 (deserved 2, so b2
  // lends 2 of its 6) and b1 (deserved 2, holds 2: lends nothing).
  ClusterView view;
  view.nodes = {MakeNode("n0", 8)};
  view.queues = {MakeQueue("a", "root", {}, {{"gpu", 4}}), MakeQueue("org-b", "root", {}, {{"gpu", 4}}),
                 MakeQueue("b1", "org-b", {}, {{"gpu", 2}}), MakeQueue("b2", "org-b", {}, {{"gpu", 2}})};
  view.running = {Occupy(view, 1, 0, "n0", 2, "b1", kLow, 9), Occupy(view, 2, 0, "n0", 2, "b2", kLow, 1),
                  Occupy(view, 3, 0, "n0", 2, "b2", kLow, 2), Occupy(view, 4, 0, "n0", 2, "b2", kLow, 3)};
  view.pending = {JobBuilder(5, "a", 1, 2)};
  // b1's task is the newest, so it would go first without the floor.
  EXPECT_EQ(Evicted(Schedule(view, Default())), (std::vector<std::pair<uint64_t, uint32_t>>{{4, 0}}));
  // Needing 4, a would take b2 to its deserved 2 and org-b to 4: allowed.
  view.pending = {JobBuilder(5, "a", 1, 4)};
  EXPECT_EQ(Evicted(Schedule(view, Default())), (std::vector<std::pair<uint64_t, uint32_t>>{{3, 0}, {4, 0}}));
}

TEST(LenderFloorTest, TasksAlreadyStoppingAreNotLentTwice) {
  // a holds 8 over its deserved 4, but the 4 on n1 are already stopping for
  // an earlier reclaim: a lends nothing more, and b finds no room on n0.
  ClusterView view = TwoTeams(2, 4, 4);
  auto stopping = Occupy(view, 1, 0, "n1", 4, "a", kLow, 1);
  stopping.stopping = true;
  stopping.stopping_for = 7;
  view.running = {stopping, Occupy(view, 2, 0, "n0", 2, "a", kLow, 2), Occupy(view, 3, 0, "n0", 2, "a", kLow, 3)};
  view.pending = {JobBuilder(4, "b", 1, 2)};
  EXPECT_TRUE(Schedule(view, Default()).evictions.empty());
}

TEST(LenderFloorTest, AWholeGangLargerThanTheExcessIsNotTaken) {
  // a lends 2 (holds 8, deserves 6), but its only low job is a gang of 4:
  // taking it would leave a at 4 of its deserved 6.
  ClusterView view = TwoTeams(1, 8, 6);
  view.running = {Occupy(view, 1, 0, "n0", 4, "a", PriorityClass::kMedium, 1),
                  Occupy(view, 2, 0, "n0", 2, "a", kLow, 2), Occupy(view, 2, 1, "n0", 2, "a", kLow, 2)};
  for (auto& task : view.running) task.group_active = task.job == JobId(2) ? 2 : 1;
  for (auto& task : view.running) task.group_min = task.group_active;
  view.pending = {JobBuilder(3, "b", 1, 2)};
  EXPECT_TRUE(Schedule(view, Default()).evictions.empty());
}

}  // namespace
}  // namespace gpool::scheduler
