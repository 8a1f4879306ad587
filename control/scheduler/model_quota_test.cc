// Quotas per GPU model and per device memory are whole: reclaim and DRF read
// a deserved share of `gpu/<model>` or `gpu_memory` as they read one of `gpu`.
#include <gtest/gtest.h>

#include "control/scheduler/scenario.h"

namespace gpool::scheduler {
namespace {

using namespace testing;  // NOLINT: the scenario builders
using topology::ClusterView;

// Queues "a" and "b" on four 8-GPU A100 nodes with the given deserved shares.
ClusterView A100Teams(Quota deserved_a, Quota deserved_b) {
  ClusterView view;
  for (int n = 0; n < 4; ++n) view.nodes.push_back(MakeNode("n" + std::to_string(n), 8, "public", "A100"));
  view.queues = {MakeQueue("a", "root", {}, std::move(deserved_a)), MakeQueue("b", "root", {}, std::move(deserved_b))};
  return view;
}

TEST(ModelQuotaTest, ReclaimTakesBackADeservedShareOfAModel) {
  // Only gpu/A100 is shared out: b's low work borrowed a's 16 A100s.
  ClusterView view = A100Teams({{"gpu/A100", 16}}, {{"gpu/A100", 16}});
  for (uint32_t n = 0; n < 4; ++n) {
    view.running.push_back(Occupy(view, 1 + n, 0, "n" + std::to_string(n), 8, "b", kLow, n));
  }
  view.pending = {JobBuilder(9, "a", 1, 8).Model("A100")};
  Plan plan = Schedule(view, Default());
  ASSERT_EQ(plan.evictions.size(), 1u);
  EXPECT_NE(plan.evictions[0].reason.find("reclaimed by queue a"), std::string::npos);
  // Past its own share of the model, a takes nothing back.
  view.queues = {MakeQueue("a", "root", {}, {{"gpu/A100", 4}}), MakeQueue("b", "root", {}, {{"gpu/A100", 16}})};
  EXPECT_TRUE(Schedule(view, Default()).evictions.empty());
}

TEST(ModelQuotaTest, DrfWeighsADeservedShareOfAModel) {
  // a holds 5 of its 8 deserved A100s (62.5 %), b 2 of its 3 (67 %): a goes
  // first for the last GPU. Against the node's 8 GPUs b (2) would look
  // smaller than a (5). Both stay within their shares, so both may run.
  ClusterView view = A100Teams({{"gpu/A100", 8}}, {{"gpu/A100", 3}});
  view.nodes.resize(1);
  view.running = {Occupy(view, 1, 0, "n0", 4, "a"), Occupy(view, 2, 0, "n0", 2, "b"), Occupy(view, 3, 0, "n0", 1, "a")};
  view.pending = {JobBuilder(4, "b", 1, 1), JobBuilder(5, "a", 1, 1)};
  Plan plan = Schedule(view, Default());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].job, JobId(5));
}

TEST(ModelQuotaTest, ReclaimTakesBackADeservedShareOfDeviceMemory) {
  // b's low shares hold 4 x 40 GiB of device memory, beyond its 80 GiB; a
  // deserves 80 GiB and asks for a 40 GiB share while every GPU is taken.
  ClusterView view;
  view.nodes = {MakeNode("n0", 2, "pooled")};
  view.queues = {MakeQueue("a", "root", {}, {{"gpu_memory", 81920}}),
                 MakeQueue("b", "root", {}, {{"gpu_memory", 81920}})};
  for (uint32_t i = 0; i < 4; ++i) {
    auto task = Occupy(view, 1 + i, 0, "n0", 0, "b", kLow, i);
    task.gpus = 1;
    task.gpu_memory_mib = 40960;
    auto& gpu = view.nodes[0].gpus[i / 2];
    ++gpu.tenants;
    gpu.memory_used_mib += 40960;
    gpu.qos = "best-effort";
    view.running.push_back(task);
  }
  view.pending = {JobBuilder(9, "a", 1, 1).Pool("pooled").Share(40960)};
  Plan plan = Schedule(view, Default());
  ASSERT_EQ(plan.evictions.size(), 1u);
  EXPECT_NE(plan.evictions[0].reason.find("reclaimed by queue a"), std::string::npos);
}

}  // namespace
}  // namespace gpool::scheduler
