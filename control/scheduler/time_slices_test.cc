// Time-slicing (time_slices.cc): a GPU advertised as N replicas takes N
// low-class whole-GPU tasks and no other work; replicas go before whole
// GPUs, charge no GPU quota, and a full set of replicas explains itself.
#include <gtest/gtest.h>

#include "control/scheduler/scenario.h"

namespace gpool::scheduler {
namespace {

using namespace testing;  // NOLINT: the scenario builders
using topology::ClusterView;
using Ids = std::vector<uint32_t>;

// "n1": GPU 0 advertised as `slices` replicas, GPU 1 an ordinary one.
topology::NodeView SlicedNode(uint32_t slices) {
  auto node = MakeNode("n1", 2);
  node.gpus[0].time_slices = slices;
  return node;
}

const Placement* BindOfJob(const Plan& plan, uint64_t job) {
  for (const auto& bind : plan.binds) {
    if (bind.job.value() == job) return &bind;
  }
  return nullptr;
}

TEST(TimeSliceTest, LowTasksShareTheReplicasAndOtherWorkGetsOnlyWholeGpus) {
  ClusterView view;
  view.nodes = {SlicedNode(4)};
  view.pending = {JobBuilder(1, "default", 1, 1)};  // medium
  for (uint64_t id = 2; id <= 6; ++id) view.pending.push_back(JobBuilder(id, "default", 1, 1).Class(kLow));
  Plan plan = Schedule(view, Default());
  ASSERT_NE(BindOfJob(plan, 1), nullptr);
  EXPECT_EQ(BindOfJob(plan, 1)->gpu_indices, (Ids{1})) << "medium work never runs on a replica";
  EXPECT_FALSE(BindOfJob(plan, 1)->grant.time_slice);
  uint32_t replicas = 0;
  for (uint64_t id = 2; id <= 6; ++id) {
    const Placement* bind = BindOfJob(plan, id);
    if (bind == nullptr) continue;
    EXPECT_EQ(bind->gpu_indices, (Ids{0}));
    EXPECT_TRUE(bind->grant.time_slice);
    ++replicas;
  }
  EXPECT_EQ(replicas, 4u) << "four replicas, and GPU 1 went to the medium job";
  EXPECT_EQ(plan.binds.size(), 5u);
}

TEST(TimeSliceTest, ReplicasGoBeforeWholeGpusAndChargeNoGpuQuota) {
  ClusterView view;
  view.nodes = {SlicedNode(2)};
  view.queues = {MakeQueue("root", ""), MakeQueue("default", "root", {{"gpu", 1}})};
  view.pending = {JobBuilder(1, "default", 1, 1).Class(kLow), JobBuilder(2, "default", 1, 1).Class(kLow),
                  JobBuilder(3, "default", 1, 1).Class(kLow)};
  Plan plan = Schedule(view, Default());
  ASSERT_EQ(plan.binds.size(), 3u) << "two replicas charge nothing; the third takes the queue's one GPU";
  EXPECT_TRUE(BindOfJob(plan, 1)->grant.time_slice);
  EXPECT_TRUE(BindOfJob(plan, 2)->grant.time_slice);
  EXPECT_FALSE(BindOfJob(plan, 3)->grant.time_slice);
  EXPECT_EQ(BindOfJob(plan, 3)->gpu_indices, (Ids{1}));
}

TEST(TimeSliceTest, HeldReplicasCountAndOnlyReplicasLeftMeansOthersWait) {
  ClusterView view;
  view.nodes = {SlicedNode(3)};
  view.nodes[0].gpus[0].tenants = 3;     // every replica held
  view.nodes[0].gpus[1].allocated = true;
  view.pending = {JobBuilder(1, "default", 1, 1).Class(kLow)};
  Plan plan = Schedule(view, Default());
  EXPECT_TRUE(plan.binds.empty());
  EXPECT_FALSE(ReasonsOf(plan, 1).empty());

  view.nodes[0].gpus[0].tenants = 1;
  view.pending = {JobBuilder(2, "default", 1, 1)};  // medium: a free replica is no GPU for it
  plan = Schedule(view, Default());
  EXPECT_TRUE(plan.binds.empty());
  EXPECT_EQ(ReasonsOf(plan, 2), (std::vector<std::string>{"1 node: insufficient GPUs"}));
}

TEST(TimeSliceTest, ATaskOfSeveralGpusTakesReplicasOfDistinctGpusAndSharesNeverLand) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 3)};
  for (auto& gpu : view.nodes[0].gpus) gpu.time_slices = 2;
  view.pending = {JobBuilder(1, "default", 1, 2).Class(kLow), JobBuilder(2, "default", 1, 1).Class(kLow).Share(1024)};
  Plan plan = Schedule(view, Default());
  ASSERT_NE(BindOfJob(plan, 1), nullptr);
  Ids gpus = BindOfJob(plan, 1)->gpu_indices;
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_NE(gpus[0], gpus[1]);
  EXPECT_EQ(BindOfJob(plan, 2), nullptr) << "a share needs memory isolation a replica does not have";
}

}  // namespace
}  // namespace gpool::scheduler
