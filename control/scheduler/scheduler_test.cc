#include "control/scheduler/scheduler.h"

#include <gtest/gtest.h>

#include "control/scheduler/queue_tree.h"
#include "control/scheduler/scenario.h"
#include "topology/lcg.h"

namespace gpool::scheduler {
namespace {

using testing::WithStrategy;
using topology::ClusterView;
using topology::NodeView;
using topology::PendingJob;

NodeView Node(std::string name, uint32_t gpus, uint32_t used = 0, uint64_t cpu = 64'000, uint64_t mem = 512 * 1024) {
  NodeView node;
  node.name = std::move(name);
  node.cpu_milli_total = node.cpu_milli_free = cpu;
  node.memory_mib_total = node.memory_mib_free = mem;
  for (uint32_t i = 0; i < gpus; ++i) node.gpus.push_back({i, "A100", 81920, true, i < used});
  return node;
}

PendingJob Job(uint64_t id, std::vector<Resources> tasks, int32_t priority = 0, uint64_t arrival = 0) {
  PendingJob job;
  job.id = JobId(id);
  job.priority = priority;
  job.arrival = arrival == 0 ? id : arrival;
  for (uint32_t i = 0; i < tasks.size(); ++i) job.tasks.push_back({i, 0, tasks[i]});
  return job;
}

Resources Gpus(uint32_t n, uint64_t cpu = 1000, uint64_t mem = 1024) { return Resources{n, cpu, mem}; }

TEST(SchedulerTest, BinpackFillsTheFullestNodeFirst) {
  ClusterView view;
  view.nodes = {Node("a", 8, 2), Node("b", 8, 6), Node("c", 8, 0)};
  view.pending = {Job(1, {Gpus(2)})};
  Plan plan = Schedule(view, WithStrategy(Strategy::kBinpack));
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].node, "b");
  EXPECT_EQ(plan.binds[0].gpu_indices, (std::vector<uint32_t>{6, 7}));
}

TEST(SchedulerTest, SpreadPicksTheEmptiestNode) {
  ClusterView view;
  view.nodes = {Node("a", 8, 2), Node("b", 8, 6), Node("c", 8, 0)};
  view.pending = {Job(1, {Gpus(2)})};
  Plan plan = Schedule(view, WithStrategy(Strategy::kSpread));
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].node, "c");
}

TEST(SchedulerTest, HigherPriorityFirstThenFifo) {
  ClusterView view;
  view.nodes = {Node("a", 8)};
  view.pending = {Job(1, {Gpus(8)}, 0, 1), Job(2, {Gpus(8)}, 5, 2), Job(3, {Gpus(8)}, 5, 3)};
  Plan plan = Schedule(view, {});
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].job, JobId(2));
  ASSERT_EQ(plan.pending.size(), 2u);
  EXPECT_EQ(plan.pending[0].job, JobId(3));
  EXPECT_EQ(plan.pending[1].job, JobId(1));
}

TEST(SchedulerTest, GangIsAllOrNothingAndReleasesTentativePlacements) {
  ClusterView view;
  view.nodes = {Node("a", 8), Node("b", 4)};
  // Needs 3 x 4 GPUs but only 12 exist in pieces of 8 and 4: tasks 0,1 fit on a, task 2 on b...
  view.pending = {Job(1, {Gpus(4), Gpus(4), Gpus(4), Gpus(4)}), Job(2, {Gpus(8)})};
  Plan plan = Schedule(view, {});
  // Job 1 cannot place its 4th task, so none of its tasks are bound and job 2 gets node a.
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].job, JobId(2));
  EXPECT_EQ(plan.binds[0].node, "a");
  ASSERT_EQ(plan.pending.size(), 1u);
  EXPECT_EQ(plan.pending[0].job, JobId(1));
}

TEST(SchedulerTest, MultiTaskJobSpreadsOverNodesWhenNeeded) {
  ClusterView view;
  view.nodes = {Node("a", 8), Node("b", 8)};
  view.pending = {Job(1, {Gpus(6), Gpus(6)})};
  Plan plan = Schedule(view, {});
  ASSERT_EQ(plan.binds.size(), 2u);
  EXPECT_NE(plan.binds[0].node, plan.binds[1].node);
}

TEST(SchedulerTest, ImpossibleJobExplainsWhy) {
  ClusterView view;
  view.nodes = {Node("a", 8), Node("b", 8), Node("c", 8)};
  view.pending = {Job(1, {Gpus(9)})};
  Plan plan = Schedule(view, {});
  EXPECT_TRUE(plan.binds.empty());
  ASSERT_EQ(plan.pending.size(), 1u);
  EXPECT_EQ(topology::RenderPendingReasons(plan.pending[0].reasons),
            (std::vector<std::string>{"task 0 needs 9 GPUs but the largest node has 8", "3 nodes: insufficient GPUs"}));
}

TEST(SchedulerTest, ReasonsCountEachRejectionKind) {
  ClusterView view;
  view.nodes = {Node("a", 8, 8), Node("b", 8, 0, 500), Node("c", 8)};
  view.nodes[2].ready = false;
  view.nodes.push_back(Node("d", 8));
  view.nodes[3].cordoned = true;
  view.pending = {Job(1, {Gpus(1, 1000)})};
  Plan plan = Schedule(view, {});
  ASSERT_EQ(plan.pending.size(), 1u);
  EXPECT_EQ(topology::RenderPendingReasons(plan.pending[0].reasons),
            (std::vector<std::string>{"1 node: node not ready", "1 node: node cordoned", "1 node: insufficient GPUs",
                                      "1 node: insufficient CPU"}));
}

TEST(SchedulerTest, NoNodesIsExplained) {
  ClusterView view;
  view.pending = {Job(1, {Gpus(1)})};
  Plan plan = Schedule(view, {});
  ASSERT_EQ(plan.pending.size(), 1u);
  EXPECT_EQ(topology::RenderPendingReasons(plan.pending[0].reasons), (std::vector<std::string>{"no nodes registered"}));
}

TEST(SchedulerTest, UnhealthyGpusAreNeverPlaced) {
  ClusterView view;
  view.nodes = {Node("a", 2)};
  view.nodes[0].gpus[0].healthy = false;
  view.pending = {Job(1, {Gpus(1)}), Job(2, {Gpus(1)})};
  Plan plan = Schedule(view, {});
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].gpu_indices, (std::vector<uint32_t>{1}));
}

TEST(SchedulerTest, CpuOnlyJobsUseCpuAndMemory) {
  ClusterView view;
  view.nodes = {Node("a", 0, 0, 4000, 8192)};
  view.pending = {Job(1, {Resources{0, 3000, 4096}}), Job(2, {Resources{0, 3000, 4096}})};
  Plan plan = Schedule(view, {});
  ASSERT_EQ(plan.binds.size(), 1u);
  ASSERT_EQ(plan.pending.size(), 1u);
  EXPECT_EQ(topology::RenderPendingReasons(plan.pending[0].reasons), (std::vector<std::string>{"1 node: insufficient CPU"}));
}

// Property: whatever the input, the plan never hands out more than exists.
TEST(SchedulerTest, RandomClustersAreNeverOverAllocated) {
  topology::Lcg rng(42);
  auto next = [&rng](uint64_t mod) { return rng.Below(mod); };
  for (int round = 0; round < 300; ++round) {
    ClusterView view;
    const int nodes = 1 + static_cast<int>(next(6));
    for (int n = 0; n < nodes; ++n) {
      view.nodes.push_back(Node("n" + std::to_string(n), static_cast<uint32_t>(next(9)), 0, 1000 * (1 + next(16)),
                                1024 * (1 + next(64))));
      for (auto& gpu : view.nodes.back().gpus) gpu.allocated = next(4) == 0;
    }
    const int jobs = static_cast<int>(next(10));
    for (int j = 1; j <= jobs; ++j) {
      std::vector<Resources> tasks;
      for (uint64_t t = 0, count = 1 + next(3); t < count; ++t) {
        tasks.push_back(Resources{static_cast<uint32_t>(next(5)), 500 * next(8), 512 * next(16)});
      }
      view.pending.push_back(Job(j, tasks, static_cast<int32_t>(next(3))));
    }
    for (Strategy strategy : {Strategy::kBinpack, Strategy::kSpread}) {
      Plan plan = Schedule(view, WithStrategy(strategy));
      std::map<std::string, std::set<uint32_t>> gpus_taken;
      std::map<std::string, uint64_t> cpu, mem;
      std::map<uint64_t, size_t> per_job;
      for (const auto& bind : plan.binds) {
        ++per_job[bind.job.value()];
        const NodeView* node = nullptr;
        for (const auto& n : view.nodes) {
          if (n.name == bind.node) node = &n;
        }
        ASSERT_NE(node, nullptr);
        for (uint32_t g : bind.gpu_indices) {
          ASSERT_TRUE(gpus_taken[bind.node].insert(g).second) << "GPU double-booked";
          ASSERT_FALSE(node->gpus[g].allocated) << "already-allocated GPU handed out";
        }
        cpu[bind.node] += bind.cpu_milli;
        mem[bind.node] += bind.memory_mib;
        ASSERT_LE(cpu[bind.node], node->cpu_milli_free);
        ASSERT_LE(mem[bind.node], node->memory_mib_free);
      }
      for (const auto& job : view.pending) {
        auto it = per_job.find(job.id.value());
        if (it != per_job.end()) {
          ASSERT_EQ(it->second, job.tasks.size()) << "gang split";
        }
      }
      ASSERT_EQ(per_job.size() + plan.pending.size(), view.pending.size());
    }
  }
}

// QueueTree remembers each queue's dominant share until its usage (its own
// or a descendant's) or the cluster's totals change: every such change must
// show in the next answer.
TEST(QueueTreeTest, DominantShareFollowsEveryChargeRefundAndTotal) {
  QueueTree tree({testing::MakeQueue("root", ""), testing::MakeQueue("group", "root", {}, {{"gpu", 10}}),
                  testing::MakeQueue("leaf", "group"), testing::MakeQueue("other", "root")},
                 {});
  Amounts totals(tree.resource_count(), 0);
  totals[kGpu] = 100;
  tree.SetClusterTotals(totals);
  const int group = *tree.Find("group");
  const int leaf = *tree.Find("leaf");
  const int other = *tree.Find("other");
  auto gpus = [&](uint32_t n) { return tree.Demand(n, 0, 0, ""); };
  EXPECT_EQ(tree.DominantShare(group), 0u);
  EXPECT_EQ(tree.DominantShare(leaf), 0u);
  tree.Charge(leaf, gpus(5));
  EXPECT_EQ(tree.DominantShare(group), 500'000u);  // 5 of its deserved 10
  EXPECT_EQ(tree.DominantShare(leaf), 50'000u);    // 5 of the cluster's 100
  tree.Charge(other, gpus(20));
  EXPECT_EQ(tree.DominantShare(other), 200'000u);
  EXPECT_EQ(tree.DominantShare(group), 500'000u);
  tree.Refund(leaf, gpus(3));
  EXPECT_EQ(tree.DominantShare(group), 200'000u);
  EXPECT_EQ(tree.DominantShare(leaf), 20'000u);
  totals[kGpu] = 50;
  tree.SetClusterTotals(totals);
  EXPECT_EQ(tree.DominantShare(other), 400'000u);
  EXPECT_EQ(tree.DominantShare(leaf), 40'000u);
  EXPECT_EQ(tree.DominantShare(group), 200'000u);  // its deserved share, not the total, weighs it
}

// JobOrder keeps a queue's share key until ShareKeyChanged says its path's
// usage or the totals changed: a change anywhere on the path (not the
// root's alone) must say so, and a key read after it must show the change.
TEST(QueueTreeTest, ShareKeyChangesWithItsPathOnly) {
  QueueTree tree({testing::MakeQueue("root", ""), testing::MakeQueue("group", "root"),
                  testing::MakeQueue("leaf", "group"), testing::MakeQueue("sibling", "group"),
                  testing::MakeQueue("other", "root")},
                 {});
  Amounts totals(tree.resource_count(), 0);
  totals[kGpu] = 100;
  tree.SetClusterTotals(totals);
  const int leaf = *tree.Find("leaf");
  const int sibling = *tree.Find("sibling");
  const int other = *tree.Find("other");
  auto gpus = [&](uint32_t n) { return tree.Demand(n, 0, 0, ""); };
  auto key = [&](int queue) {
    std::vector<uint64_t> shares;
    tree.ShareKey(queue, shares);
    return shares;
  };
  const std::vector<uint64_t> leaf_before = key(leaf);
  const std::vector<uint64_t> other_before = key(other);
  uint64_t read = tree.version();
  EXPECT_FALSE(tree.ShareKeyChanged(leaf, read));
  tree.Charge(other, gpus(10));  // the root's usage changes too, which no key holds
  EXPECT_FALSE(tree.ShareKeyChanged(leaf, read));
  EXPECT_FALSE(tree.ShareKeyChanged(sibling, read));
  EXPECT_TRUE(tree.ShareKeyChanged(other, read));
  EXPECT_EQ(key(leaf), leaf_before);
  EXPECT_NE(key(other), other_before);
  read = tree.version();
  tree.Charge(sibling, gpus(10));  // their group's share moves for both
  EXPECT_TRUE(tree.ShareKeyChanged(leaf, read));
  EXPECT_TRUE(tree.ShareKeyChanged(sibling, read));
  EXPECT_FALSE(tree.ShareKeyChanged(other, read));
  EXPECT_NE(key(leaf), leaf_before);
  read = tree.version();
  tree.Refund(sibling, gpus(10));
  EXPECT_TRUE(tree.ShareKeyChanged(leaf, read));
  EXPECT_EQ(key(leaf), leaf_before);
  read = tree.version();
  totals[kGpu] = 50;
  tree.SetClusterTotals(totals);
  EXPECT_TRUE(tree.ShareKeyChanged(other, read));
  EXPECT_TRUE(tree.ShareKeyChanged(leaf, read));
  read = tree.version();
  tree.Claim(leaf, gpus(4));  // claims are not usage: shares stay
  EXPECT_FALSE(tree.ShareKeyChanged(leaf, read));
}

}  // namespace
}  // namespace gpool::scheduler
