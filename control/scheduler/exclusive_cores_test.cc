// Exclusive whole cores (exclusive_cores.h): which CPU ids a task gets, that
// the scheduler hands them out by id and never twice, and that a node short
// of free ids explains itself. The property test runs cycles over a random
// cluster, applying each plan to the view as the state machine would and
// ending random tasks, and checks that no id is ever held by two tasks.
#include "control/scheduler/exclusive_cores.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "control/scheduler/scenario.h"

namespace gpool::scheduler {
namespace {

using namespace testing;  // NOLINT: the scenario builders
using topology::ClusterView;
using topology::NumaSlot;
using Ids = std::vector<uint32_t>;

NumaSlot CoresSlot(int32_t id, Ids free) {
  NumaSlot slot;
  slot.id = id;
  slot.cpu_milli_total = slot.cpu_milli_free = 1000 * free.size();
  slot.memory_mib_total = slot.memory_mib_free = 64 * 1024;
  slot.cpu_ids_free = std::move(free);
  return slot;
}

// A node of two NUMA nodes with CPUs 0-3 and 4-7; GPUs split between them.
topology::NodeView CoresNode(std::string name, uint32_t gpus) {
  auto node = MakeNode(std::move(name), gpus, "public", "A100", 8'000, 128 * 1024);
  for (uint32_t g = 0; g < gpus; ++g) node.gpus[g].numa = g < gpus / 2 ? 0 : 1;
  node.numa = {CoresSlot(0, {0, 1, 2, 3}), CoresSlot(1, {4, 5, 6, 7})};
  return node;
}

topology::PendingJob ExclusiveJob(uint64_t id, uint32_t tasks, uint32_t gpus, uint64_t cpus,
                                  topology::NumaPolicy policy = topology::NumaPolicy::kNone) {
  topology::PendingJob job = JobBuilder(id, "default", tasks, gpus).Cpu(cpus * 1000, 1024).Numa(policy);
  for (auto& task : job.tasks) task.resources.exclusive_cores = true;
  return job;
}

TEST(PickExclusiveCpusTest, TheTasksNumaNodeFirstThenTheTightestThenAcross) {
  const std::vector<NumaSlot> numa = {CoresSlot(0, {0, 1, 2, 3}), CoresSlot(1, {5, 7})};
  EXPECT_EQ(PickExclusiveCpus(numa, 0, true, 2), (Ids{0, 1}));
  EXPECT_EQ(PickExclusiveCpus(numa, 1, true, 2), (Ids{5, 7}));
  EXPECT_EQ(PickExclusiveCpus(numa, 1, true, 3), std::nullopt) << "single-numa-node: there or nowhere";
  EXPECT_EQ(PickExclusiveCpus(numa, 1, false, 3), (Ids{0, 1, 2})) << "best-effort: elsewhere when it is short";
  EXPECT_EQ(PickExclusiveCpus(numa, -1, false, 2), (Ids{5, 7})) << "the tightest NUMA node that holds them";
  EXPECT_EQ(PickExclusiveCpus(numa, -1, false, 5), (Ids{0, 1, 2, 3, 5})) << "no policy: across NUMA nodes";
  EXPECT_EQ(PickExclusiveCpus(numa, -1, true, 5), std::nullopt);
  EXPECT_EQ(PickExclusiveCpus(numa, -1, false, 7), std::nullopt) << "only 6 free";
  EXPECT_EQ(PickExclusiveCpus({}, -1, false, 1), std::nullopt) << "no cpulist in the spec: no exclusive cores";
  EXPECT_EQ(ExclusiveCoresWanted(Resources{.cpu_milli = 3000, .exclusive_cores = true}), 3u);
  EXPECT_EQ(ExclusiveCoresWanted(Resources{.cpu_milli = 3000}), 0u);
}

TEST(PickExclusiveCpusTest, MarkTakesIdsOutAndPutsBackOnlyTheOwnersOwn) {
  const std::vector<NumaSlot> inventory = {CoresSlot(0, {0, 1, 2, 3}), CoresSlot(1, {4, 5})};
  std::vector<NumaSlot> numa = inventory;
  MarkExclusiveCpus(numa, {1, 4}, false, inventory);
  EXPECT_EQ(numa[0].cpu_ids_free, (Ids{0, 2, 3}));
  EXPECT_EQ(numa[1].cpu_ids_free, (Ids{5}));
  MarkExclusiveCpus(numa, {4, 1, 9}, true, inventory);
  EXPECT_EQ(numa[0].cpu_ids_free, (Ids{0, 1, 2, 3}));
  EXPECT_EQ(numa[1].cpu_ids_free, (Ids{4, 5})) << "9 was nobody's: not made up";
}

TEST(ExclusiveCoresTest, TasksGetDisjointIdsUntilTheyRunOutAndTheRestSaysWhy) {
  ClusterView view;
  view.nodes = {CoresNode("n1", 0)};
  view.nodes[0].cpu_milli_total = view.nodes[0].cpu_milli_free = 64'000;  // CPU milli is not what runs out
  view.pending = {ExclusiveJob(1, 3, 0, 2), ExclusiveJob(2, 2, 0, 1)};
  Plan plan = Schedule(view, Default());
  std::set<uint32_t> held;
  size_t job1 = 0;
  for (const auto& bind : plan.binds) {
    EXPECT_EQ(bind.cpu_ids.size(), bind.job.value() == 1 ? 2u : 1u);
    for (uint32_t id : bind.cpu_ids) EXPECT_TRUE(held.insert(id).second) << "CPU " << id << " handed out twice";
    job1 += bind.job.value() == 1;
  }
  EXPECT_EQ(job1, 3u);
  ASSERT_EQ(plan.binds.size(), 5u) << "6 of 8 ids to job 1, 2 to job 2";
  EXPECT_EQ(held.size(), 8u);
  view.nodes[0].numa[0].cpu_ids_free = {};
  view.nodes[0].numa[1].cpu_ids_free = {7};
  view.pending = {ExclusiveJob(3, 1, 0, 2)};
  plan = Schedule(view, Default());
  EXPECT_TRUE(plan.binds.empty());
  EXPECT_EQ(ReasonsOf(plan, 3), (std::vector<std::string>{"1 node: too few whole cores free for exclusive use"}));
}

TEST(ExclusiveCoresTest, OrdinaryTasksTakeNoIds) {
  ClusterView view;
  view.nodes = {CoresNode("n1", 2)};
  view.pending = {JobBuilder(1, "default", 1, 1).Cpu(2000, 1024)};
  Plan plan = Schedule(view, Default());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_TRUE(plan.binds[0].cpu_ids.empty());
}

TEST(ExclusiveCoresTest, SingleNumaNodeTakesCoresBesideItsGpus) {
  ClusterView view;
  view.nodes = {CoresNode("n1", 4)};
  view.nodes[0].gpus[0].allocated = view.nodes[0].gpus[1].allocated = true;  // NUMA 0's GPUs are taken
  view.pending = {ExclusiveJob(1, 1, 2, 3, topology::NumaPolicy::kSingleNumaNode)};
  Plan plan = Schedule(view, Default());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].gpu_indices, (Ids{2, 3}));
  EXPECT_EQ(plan.binds[0].numa_node, 1);
  EXPECT_EQ(plan.binds[0].cpu_ids, (Ids{4, 5, 6}));
}

TEST(ExclusiveCoresTest, SingleNumaNodeWaitsWhenItsGpusNumaNodeIsShortOfCores) {
  ClusterView view;
  view.nodes = {CoresNode("n1", 2)};
  view.nodes[0].gpus[0].allocated = true;    // only GPU 1 (NUMA 1) is free
  view.nodes[0].numa[1].cpu_ids_free = {4};  // and NUMA 1 has one free core
  view.pending = {ExclusiveJob(1, 1, 1, 2, topology::NumaPolicy::kSingleNumaNode),
                  ExclusiveJob(2, 1, 1, 2, topology::NumaPolicy::kBestEffort)};
  Plan plan = Schedule(view, Default());
  ASSERT_EQ(plan.binds.size(), 1u) << ::testing::PrintToString(ReasonsOf(plan, 1))
                                   << ::testing::PrintToString(ReasonsOf(plan, 2));
  EXPECT_EQ(plan.binds[0].job.value(), 2u) << "best-effort takes cores of the other NUMA node";
  EXPECT_EQ(plan.binds[0].cpu_ids, (Ids{0, 1}));
  EXPECT_FALSE(ReasonsOf(plan, 1).empty());
}

TEST(ExclusiveCoresTest, ACpuOnlyTaskGoesToTheNumaNodeThatHasTheCores) {
  ClusterView view;
  view.nodes = {CoresNode("n1", 0)};
  view.nodes[0].numa[0].cpu_ids_free = {3};  // NUMA 0 has CPU room but one free core
  view.pending = {ExclusiveJob(1, 1, 0, 2, topology::NumaPolicy::kSingleNumaNode)};
  Plan plan = Schedule(view, Default());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].numa_node, 1);
  EXPECT_EQ(plan.binds[0].cpu_ids, (Ids{4, 5}));
}

// Cycles over a random cluster: every plan is applied to the view (ids out
// of the free lists, as the coordinator's view builder does) and random
// tasks end (their ids back). No id is ever held by two tasks, and every id
// handed out is one of its node's.
TEST(ExclusiveCoresPropertyTest, NoCoreIsEverHeldByTwoTasks) {
  std::mt19937 rng(50);
  for (int round = 0; round < 20; ++round) {
    ClusterView view;
    std::map<std::string, std::set<uint32_t>> inventory;
    const int nodes = 1 + static_cast<int>(rng() % 4);
    for (int n = 0; n < nodes; ++n) {
      auto node = CoresNode("n" + std::to_string(n), 2 * (rng() % 3));
      node.cpu_milli_total = node.cpu_milli_free = 1'000'000;
      for (const auto& slot : node.numa) inventory[node.name].insert(slot.cpu_ids_free.begin(), slot.cpu_ids_free.end());
      view.nodes.push_back(node);
    }
    std::map<std::pair<std::string, uint32_t>, std::pair<uint64_t, uint32_t>> holder;  // (node, id) -> task
    std::vector<std::pair<std::string, Ids>> running;
    uint64_t next_job = 1;
    for (int cycle = 0; cycle < 15; ++cycle) {
      view.pending.clear();
      for (int j = 0; j < 3; ++j) {
        const auto policy = static_cast<topology::NumaPolicy>(rng() % 3);
        auto job = ExclusiveJob(next_job++, 1 + rng() % 3, rng() % 2, 1 + rng() % 3, policy);
        if (rng() % 4 == 0) {
          for (auto& task : job.tasks) task.resources.exclusive_cores = false;  // ordinary work beside it
        }
        view.pending.push_back(job);
      }
      Plan plan = Schedule(view, Default());
      for (const auto& bind : plan.binds) {
        auto node = std::find_if(view.nodes.begin(), view.nodes.end(), [&](auto& v) { return v.name == bind.node; });
        ASSERT_NE(node, view.nodes.end());
        for (uint32_t g : bind.gpu_indices) node->gpus[g].allocated = true;
        for (uint32_t id : bind.cpu_ids) {
          ASSERT_TRUE(inventory[bind.node].count(id)) << "CPU " << id << " is not " << bind.node << "'s";
          auto [at, fresh] = holder.emplace(std::pair{bind.node, id}, std::pair{bind.job.value(), bind.task_index});
          ASSERT_TRUE(fresh) << "CPU " << id << " of " << bind.node << " given to job " << bind.job.value()
                             << " while job " << at->second.first << " holds it";
          for (auto& slot : node->numa) std::erase(slot.cpu_ids_free, id);
        }
        if (!bind.cpu_ids.empty()) running.emplace_back(bind.node, bind.cpu_ids);
      }
      // Some tasks end: their ids are free again.
      for (size_t i = 0; i < running.size();) {
        if (rng() % 3 != 0) {
          ++i;
          continue;
        }
        auto& [name, ids] = running[i];
        auto node = std::find_if(view.nodes.begin(), view.nodes.end(), [&](auto& v) { return v.name == name; });
        for (uint32_t id : ids) {
          holder.erase({name, id});
          auto& slot = node->numa[id < 4 ? 0 : 1];
          slot.cpu_ids_free.insert(std::lower_bound(slot.cpu_ids_free.begin(), slot.cpu_ids_free.end(), id), id);
        }
        running.erase(running.begin() + static_cast<long>(i));
      }
    }
  }
}

}  // namespace
}  // namespace gpool::scheduler
