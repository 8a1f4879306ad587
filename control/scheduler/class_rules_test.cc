// Scenario tests of the priority-class rule (class_rules.h) on every path
// that evicts: what reclaim and preemption may take, what may borrow beyond
// a deserved share, and system work. The property test checks the same rule
// over random clusters.
#include <gtest/gtest.h>

#include "control/scheduler/scenario.h"

namespace gpool::scheduler {
namespace {

using namespace testing;  // NOLINT: the scenario builders
using topology::ClusterView;
using topology::PriorityClass;

// --- Deserved share and reclaim -------------------------------------------------


TEST(ReclaimTest, OnlyLowClassWorkBorrowsIdleCapacityBeyondDeserved) {
  ClusterView view = TwoTeams(1, 8, 4);
  view.pending = {JobBuilder(1, "a", 1, 6).Class(kLow)};
  Plan plan = Schedule(view, Default());
  EXPECT_EQ(BindsOf(plan, 1), 1u);
  // Medium, high and system work is never taken back, so it may not borrow:
  // it waits, told why, though the node is idle.
  for (PriorityClass cls : {PriorityClass::kMedium, kHigh, PriorityClass::kSystem}) {
    view.pending = {JobBuilder(1, "a", 1, 6).Class(cls)};
    plan = Schedule(view, Default());
    EXPECT_EQ(BindsOf(plan, 1), 0u) << ToString(cls);
    EXPECT_TRUE(AnyReasonContains(plan, 1, "queue a holds its deserved gpu (0 of 4 in use, needs 6 more): only "
                                           "low-class work may borrow beyond it"))
        << ToString(cls);
  }
  // Within deserved, every class runs.
  view.pending = {JobBuilder(1, "a", 1, 4)};
  EXPECT_EQ(BindsOf(Schedule(view, Default()), 1), 1u);
}

TEST(ReclaimTest, OwnerTakesBackLentCapacityNewestBorrowedFirst) {
  ClusterView view = TwoTeams(1, 8, 4);
  view.running = {Occupy(view, 1, 0, "n0", 4, "a", PriorityClass::kMedium, 1),
                  Occupy(view, 2, 0, "n0", 2, "a", kLow, 2), Occupy(view, 3, 0, "n0", 2, "a", kLow, 3)};
  view.pending = {JobBuilder(4, "b", 1, 2)};
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.binds.empty());
  EXPECT_EQ(Evicted(plan), (std::vector<std::pair<uint64_t, uint32_t>>{{3, 0}}));
  EXPECT_EQ(plan.evictions[0].for_job, JobId(4));
  EXPECT_NE(plan.evictions[0].reason.find("reclaimed by queue b"), std::string::npos);
  EXPECT_TRUE(AnyReasonContains(plan, 4, "reclaiming capacity lent to other queues"));
}

TEST(ReclaimTest, LeastImportantBorrowedWorkGoesFirst) {
  ClusterView view = TwoTeams(1, 8, 4);
  view.running = {Occupy(view, 1, 0, "n0", 4, "a", PriorityClass::kMedium, 1),
                  Occupy(view, 2, 0, "n0", 2, "a", kLow, 1),
                  Occupy(view, 3, 0, "n0", 2, "a", kHigh, 9)};
  view.pending = {JobBuilder(4, "b", 1, 2)};
  Plan plan = Schedule(view, Default());
  EXPECT_EQ(Evicted(plan), (std::vector<std::pair<uint64_t, uint32_t>>{{2, 0}}));
}

TEST(ReclaimTest, MediumAndHighWorkBeyondDeservedIsNeverTaken) {
  // An operator lowered a's deserved share under running medium and high
  // work: b waits rather than evict it.
  ClusterView view = TwoTeams(1, 8, 4);
  view.running = {Occupy(view, 1, 0, "n0", 4, "a", PriorityClass::kMedium, 1),
                  Occupy(view, 2, 0, "n0", 2, "a", PriorityClass::kMedium, 2),
                  Occupy(view, 3, 0, "n0", 2, "a", kHigh, 3)};
  view.pending = {JobBuilder(4, "b", 1, 2)};
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.evictions.empty());
  EXPECT_EQ(BindsOf(plan, 4), 0u);
}

TEST(ReclaimTest, NoReclaimBeyondTheReclaimersDeservedShare) {
  // b wants 6 but deserves 4: taking from a would just hand the overrun to b.
  ClusterView view = TwoTeams(1, 8, 4);
  view.running = {Occupy(view, 1, 0, "n0", 8, "a")};
  view.pending = {JobBuilder(4, "b", 1, 6)};
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.evictions.empty());
}

TEST(ReclaimTest, NothingIsTakenFromAQueueWithinItsShare) {
  ClusterView view = TwoTeams(1, 8, 4);
  view.running = {Occupy(view, 1, 0, "n0", 4, "a"), Occupy(view, 2, 0, "n0", 4, "b")};
  view.pending = {JobBuilder(3, "b", 1, 1)};
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.evictions.empty());
}

TEST(ReclaimTest, ElasticReplicasShrinkFirst) {
  // Low work: a spare replica of the elastic job goes before a whole job.
  ClusterView view = TwoTeams(1, 8, 4);
  auto gang = Occupy(view, 1, 0, "n0", 2, "a", kLow, 5);
  auto elastic0 = Occupy(view, 2, 0, "n0", 2, "a", kLow, 1);
  auto elastic1 = Occupy(view, 2, 1, "n0", 2, "a", kLow, 1);
  auto elastic2 = Occupy(view, 2, 2, "n0", 2, "a", kLow, 1);
  for (auto* task : {&elastic0, &elastic1, &elastic2}) {
    task->group_min = 1;
    task->group_active = 3;
  }
  view.running = {gang, elastic0, elastic1, elastic2};
  view.pending = {JobBuilder(3, "b", 1, 2)};
  Plan plan = Schedule(view, Default());
  ASSERT_EQ(plan.evictions.size(), 1u);
  EXPECT_EQ(plan.evictions[0].job, JobId(2));
  // Medium takes no part in preemption: its replicas above the minimum are
  // not taken either (issue 50), so b waits and nothing is evicted.
  for (auto* task : {&gang, &elastic0, &elastic1, &elastic2}) task->priority_class = PriorityClass::kMedium;
  view.running = {gang, elastic0, elastic1, elastic2};
  plan = Schedule(view, Default());
  EXPECT_TRUE(plan.evictions.empty());
  EXPECT_EQ(BindsOf(plan, 3), 0u);
}

TEST(ReclaimTest, GuaranteeIsRestoredOnlyFromWhatLendersHoldBeyondDeserved) {
  // Deserved shares add up to 16 on an 8-GPU cluster; a holds all 8 within
  // its deserved, and b is below its guarantee of 2. Reclaim never takes a
  // lender below its deserved share (issue 50), so b waits.
  ClusterView view;
  view.nodes = {MakeNode("n0", 8)};
  view.queues = {MakeQueue("a", "root", {}, {{"gpu", 8}}, {{"gpu", 2}}),
                 MakeQueue("b", "root", {}, {{"gpu", 8}}, {{"gpu", 2}})};
  for (uint32_t t = 0; t < 4; ++t) view.running.push_back(Occupy(view, 1 + t, 0, "n0", 2, "a", kLow, 1 + t));
  view.pending = {JobBuilder(9, "b", 1, 2)};
  EXPECT_TRUE(Schedule(view, Default()).evictions.empty());
  // At deserved 6, a lends 2: exactly that much goes, the newest first.
  view.queues[0] = MakeQueue("a", "root", {}, {{"gpu", 6}}, {{"gpu", 2}});
  Plan plan = Schedule(view, Default());
  EXPECT_EQ(Evicted(plan), (std::vector<std::pair<uint64_t, uint32_t>>{{4, 0}}));
  // b wanting 4 may take no more than those 2: nothing goes.
  view.pending = {JobBuilder(9, "b", 1, 4)};
  EXPECT_TRUE(Schedule(view, Default()).evictions.empty());
  // Medium work within its deserved share is not taken either.
  for (auto& task : view.running) task.priority_class = PriorityClass::kMedium;
  view.pending = {JobBuilder(9, "b", 1, 2)};
  EXPECT_TRUE(Schedule(view, Default()).evictions.empty());
}

TEST(ReclaimTest, SiblingsAreComparedUnderTheirCommonParent) {
  ClusterView view;
  view.nodes = {MakeNode("n0", 8)};
  view.queues = {MakeQueue("org-a", "root", {}, {{"gpu", 4}}), MakeQueue("org-b", "root", {}, {{"gpu", 4}}),
                 MakeQueue("a1", "org-a"), MakeQueue("a2", "org-a"), MakeQueue("b1", "org-b")};
  view.running = {Occupy(view, 1, 0, "n0", 4, "a1", kLow, 1), Occupy(view, 2, 0, "n0", 4, "a2", kLow, 2)};
  view.pending = {JobBuilder(3, "b1", 1, 4)};
  Plan plan = Schedule(view, Default());
  EXPECT_EQ(Evicted(plan), (std::vector<std::pair<uint64_t, uint32_t>>{{2, 0}}));
}

// --- Priority classes and preemption ---------------------------------------------

TEST(PreemptTest, HighPreemptsLowOfItsQueueOnlyWhereItWillFit) {
  ClusterView view;
  view.nodes = {MakeNode("a", 4), MakeNode("b", 4)};
  // a: one low task of 2 GPUs and 2 free; b: two low tasks. Evicting on a suffices.
  view.running = {Occupy(view, 1, 0, "a", 2, "default", kLow, 1), Occupy(view, 2, 0, "b", 2, "default", kLow, 2),
                  Occupy(view, 3, 0, "b", 2, "default", kLow, 3)};
  view.pending = {JobBuilder(4, "default", 1, 4).Class(kHigh)};
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.binds.empty());
  EXPECT_EQ(Evicted(plan), (std::vector<std::pair<uint64_t, uint32_t>>{{1, 0}}));
  EXPECT_NE(plan.evictions[0].reason.find("preempted by job 4"), std::string::npos);
}

TEST(PreemptTest, MakesRoomInAQueueAtItsCapability) {
  // The queue holds its whole capability with low work: the high job may
  // still preempt, since the victims free the quota as well as the GPUs.
  ClusterView view;
  view.nodes = {MakeNode("a", 8), MakeNode("b", 8)};
  view.queues = {MakeQueue("q", "root", {{"gpu", 8}})};
  view.running = {Occupy(view, 1, 0, "a", 8, "q", kLow)};
  view.pending = {JobBuilder(2, "q", 1, 4).Class(kHigh)};
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.binds.empty()) << "node b is free but the queue is at capability";
  EXPECT_EQ(Evicted(plan), (std::vector<std::pair<uint64_t, uint32_t>>{{1, 0}}));
  // A victim too small to free the quota is not enough.
  view = ClusterView{};
  view.nodes = {MakeNode("a", 8), MakeNode("b", 8)};
  view.queues = {MakeQueue("q", "root", {{"gpu", 8}})};
  view.running = {Occupy(view, 1, 0, "a", 2, "q", kLow), Occupy(view, 3, 0, "b", 6, "q")};
  view.pending = {JobBuilder(2, "q", 1, 4).Class(kHigh)};
  plan = Schedule(view, Default());
  EXPECT_TRUE(plan.evictions.empty());
}

TEST(PreemptTest, MediumAndHighAreNeverPreempted) {
  ClusterView view;
  view.nodes = {MakeNode("a", 4)};
  view.running = {Occupy(view, 1, 0, "a", 2, "default"), Occupy(view, 2, 0, "a", 2, "default", kHigh)};
  view.pending = {JobBuilder(3, "default", 1, 2).Class(kHigh)};
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.evictions.empty());
  EXPECT_EQ(plan.pending.size(), 1u);
}

TEST(PreemptTest, OnlyHighPreempts) {
  ClusterView view;
  view.nodes = {MakeNode("a", 4)};
  view.running = {Occupy(view, 1, 0, "a", 4, "default", kLow)};
  view.pending = {JobBuilder(2, "default", 1, 2), JobBuilder(3, "default", 1, 2).Class(kLow)};
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.evictions.empty());
}

TEST(PreemptTest, StaysInsideTheQueue) {
  ClusterView view;
  view.nodes = {MakeNode("a", 4)};
  view.queues = {MakeQueue("x", "root"), MakeQueue("y", "root")};
  view.running = {Occupy(view, 1, 0, "a", 4, "y", kLow)};
  view.pending = {JobBuilder(2, "x", 1, 2).Class(kHigh)};
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.evictions.empty());
}

TEST(PreemptTest, EvictsOnlyAsMuchAsNeeded) {
  ClusterView view;
  view.nodes = {MakeNode("a", 8)};
  view.running = {Occupy(view, 1, 0, "a", 2, "default", kLow, 1), Occupy(view, 2, 0, "a", 2, "default", kLow, 2),
                  Occupy(view, 3, 0, "a", 2, "default", kLow, 3), Occupy(view, 4, 0, "a", 2, "default", kLow, 4)};
  view.pending = {JobBuilder(5, "default", 1, 3).Class(kHigh)};
  Plan plan = Schedule(view, Default());
  // 3 GPUs: two 2-GPU victims, the newest ones.
  EXPECT_EQ(Evicted(plan), (std::vector<std::pair<uint64_t, uint32_t>>{{3, 0}, {4, 0}}));
}

TEST(PreemptTest, AVictimsGangGoesWhole) {
  ClusterView view;
  view.nodes = {MakeNode("a", 4), MakeNode("b", 4)};
  auto t0 = Occupy(view, 1, 0, "a", 4, "default", kLow);
  auto t1 = Occupy(view, 1, 1, "b", 4, "default", kLow);
  t0.group_min = t1.group_min = 2;
  t0.group_active = t1.group_active = 2;
  view.running = {t0, t1};
  view.pending = {JobBuilder(2, "default", 1, 4).Class(kHigh)};
  Plan plan = Schedule(view, Default());
  EXPECT_EQ(Evicted(plan), (std::vector<std::pair<uint64_t, uint32_t>>{{1, 0}, {1, 1}}));
}

TEST(PreemptTest, PreemptorKeepsItsClaimWhileVictimsDrain) {
  // Next cycle: the victim is still stopping for job 2. Job 2 evicts nothing
  // more, and job 3 may not take the node's remaining GPU.
  ClusterView view;
  view.nodes = {MakeNode("a", 4)};
  auto victim = Occupy(view, 1, 0, "a", 3, "default", kLow);
  victim.stopping = true;
  victim.stopping_for = 2;
  victim.evicted_by = {2};
  view.running = {victim, Occupy(view, 5, 0, "a", 0, "default", kLow)};
  view.pending = {JobBuilder(2, "default", 1, 4).Class(kHigh), JobBuilder(3, "default", 1, 1)};
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.evictions.empty());
  EXPECT_TRUE(plan.binds.empty());
  EXPECT_TRUE(AnyReasonContains(plan, 2, "waiting for evicted tasks to stop"));
  EXPECT_TRUE(AnyReasonContains(plan, 3, "claimed by a preempting job"));
}

TEST(PreemptTest, NeverLoopsOnAVictimItEvictedBefore) {
  // The peers' "preemption loops forever": the low job was evicted by job 2,
  // requeued and placed again; job 2 (still pending) must not evict it again.
  ClusterView view;
  view.nodes = {MakeNode("a", 4)};
  auto victim = Occupy(view, 1, 0, "a", 4, "default", kLow);
  victim.evicted_by = {2};
  view.running = {victim};
  view.pending = {JobBuilder(2, "default", 1, 4).Class(kHigh)};
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.evictions.empty());
}

TEST(PreemptTest, FiresWhenOnlyEvictionOnOneNodeHelps) {
  // The peers' "preemption never fires": capacity is free in pieces on every
  // node, none big enough, and the low tasks are spread out.
  ClusterView view;
  for (int n = 0; n < 4; ++n) {
    view.nodes.push_back(MakeNode("n" + std::to_string(n), 8));
    view.running.push_back(Occupy(view, 10 + n, 0, "n" + std::to_string(n), 6, "default", n == 2 ? kLow : PriorityClass::kMedium));
  }
  view.pending = {JobBuilder(1, "default", 1, 8).Class(kHigh)};
  Plan plan = Schedule(view, Default());
  EXPECT_EQ(Evicted(plan), (std::vector<std::pair<uint64_t, uint32_t>>{{12, 0}}));
}

// --- Elastic replicas and system work ------------------------------------------

// A medium elastic job: `replicas` tasks of `gpus` each on node "n0", minimum `min`.
std::vector<topology::RunningTask> ElasticReplicas(ClusterView& view, uint64_t job, uint32_t replicas, uint32_t gpus,
                                           uint32_t min, const std::string& queue, PriorityClass cls) {
  std::vector<topology::RunningTask> tasks;
  for (uint32_t i = 0; i < replicas; ++i) {
    auto task = Occupy(view, job, i, "n0", gpus, queue, cls, 1);
    task.group_min = min;
    task.group_active = replicas;
    tasks.push_back(task);
  }
  return tasks;
}

TEST(ReclaimTest, SpareReplicasTakenTogetherNeverTakeALowElasticJobBelowItsMinimum) {
  // b needs 4 more GPUs: two of a's three low replicas, which would leave
  // a's job below its minimum of 2, so the whole job would go: 6 GPUs, more
  // than the 4 a holds beyond its deserved 2. One spare is all reclaim may
  // take, and it is not enough, so nothing goes.
  ClusterView view;
  view.nodes = {MakeNode("n0", 8)};
  view.queues = {MakeQueue("a", "root", {}, {{"gpu", 2}}), MakeQueue("b", "root", {}, {{"gpu", 6}})};
  view.running = ElasticReplicas(view, 1, 3, 2, 2, "a", kLow);
  view.pending = {JobBuilder(2, "b", 1, 6)};
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.evictions.empty());
  // Needing one replica's room, it takes exactly one.
  view.pending = {JobBuilder(2, "b", 1, 4)};
  plan = Schedule(view, Default());
  EXPECT_EQ(plan.evictions.size(), 1u);
  // Medium replicas above the minimum are never taken (issue 50).
  view.running = ElasticReplicas(view, 1, 3, 2, 2, "a", PriorityClass::kMedium);
  EXPECT_TRUE(Schedule(view, Default()).evictions.empty());
}

TEST(PreemptTest, HighNeverTakesMediumReplicasEvenAboveTheirMinimum) {
  // Medium takes no part in preemption: a high job of the same queue waits
  // rather than shrink an elastic medium job, however many spares it has.
  ClusterView view;
  view.nodes = {MakeNode("n0", 8)};
  view.running = ElasticReplicas(view, 1, 4, 2, 2, "default", PriorityClass::kMedium);
  view.pending = {JobBuilder(2, "default", 1, 4).Class(kHigh)};
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.evictions.empty());
  EXPECT_EQ(BindsOf(plan, 2), 0u);
  // The same replicas of a low job are taken, spares only.
  view.running = ElasticReplicas(view, 1, 4, 2, 2, "default", kLow);
  plan = Schedule(view, Default());
  ASSERT_EQ(plan.evictions.size(), 2u);
  for (const auto& eviction : plan.evictions) EXPECT_EQ(eviction.job, JobId(1));
}

TEST(SystemClassTest, IsPlacedFirstWhateverTheQueuesShares) {
  // Queue "ops" already holds more than "team", so DRF would offer team's
  // job first; the system job goes first anyway and takes the last GPUs.
  ClusterView view;
  view.nodes = {MakeNode("n0", 8)};
  view.queues = {MakeQueue("ops", "root"), MakeQueue("team", "root")};
  view.running = {Occupy(view, 1, 0, "n0", 6, "ops")};
  view.pending = {JobBuilder(2, "team", 1, 2), JobBuilder(3, "ops", 1, 2).Class(PriorityClass::kSystem)};
  Plan plan = Schedule(view, Default());
  EXPECT_EQ(BindsOf(plan, 3), 1u);
  EXPECT_EQ(BindsOf(plan, 2), 0u);
}

TEST(SystemClassTest, NoEvictionPathTouchesIt) {
  // System work beyond its queue's deserved share (lowered under it) is not
  // reclaimed; a high job of its own queue does not preempt it.
  ClusterView view = TwoTeams(1, 8, 2);
  view.running = {Occupy(view, 1, 0, "n0", 6, "a", PriorityClass::kSystem, 1)};
  view.pending = {JobBuilder(2, "b", 1, 2)};
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.evictions.empty());
  view.pending = {JobBuilder(3, "a", 1, 2).Class(kHigh)};
  view.running = {Occupy(view, 1, 0, "n0", 8, "a", PriorityClass::kSystem, 1)};
  view.queues.clear();
  plan = Schedule(view, Default());
  EXPECT_TRUE(plan.evictions.empty());
}

TEST(SystemClassTest, PreemptsLowWorkOfItsQueue) {
  ClusterView view;
  view.nodes = {MakeNode("n0", 4)};
  view.running = {Occupy(view, 1, 0, "n0", 4, "default", kLow)};
  view.pending = {JobBuilder(2, "default", 1, 2).Class(PriorityClass::kSystem)};
  Plan plan = Schedule(view, Default());
  ASSERT_EQ(Evicted(plan), (std::vector<std::pair<uint64_t, uint32_t>>{{1, 0}}));
  EXPECT_NE(plan.evictions[0].reason.find("preempted by job 2 (system)"), std::string::npos);
}

TEST(PreemptTest, AHighJobBeyondDeservedPreemptsEnoughLowWorkToFitWithinIt) {
  // research deserves 16 GPUs and its low elastic job borrowed up to 32. A
  // high job of 8 may not borrow: three replicas go (one for the room, two
  // for the share), not one.
  ClusterView view;
  for (int n = 0; n < 4; ++n) view.nodes.push_back(MakeNode("n" + std::to_string(n), 8));
  view.queues = {MakeQueue("research", "root", {}, {{"gpu", 16}})};
  for (uint32_t i = 0; i < 4; ++i) {
    auto task = Occupy(view, 1, i, "n" + std::to_string(i), 8, "research", kLow, i);
    task.group_min = 1;
    task.group_active = 4;
    view.running.push_back(task);
  }
  view.pending = {JobBuilder(2, "research", 1, 8).Class(kHigh)};
  Plan plan = Schedule(view, Default());
  EXPECT_EQ(plan.evictions.size(), 3u);
  EXPECT_TRUE(plan.binds.empty());
  // For 16 GPUs the spare replicas are not enough (8 + 16 > 16): the low
  // job goes whole.
  view.pending = {JobBuilder(2, "research", 2, 8).Class(kHigh)};
  plan = Schedule(view, Default());
  EXPECT_EQ(plan.evictions.size(), 4u);
}

}  // namespace
}  // namespace gpool::scheduler
