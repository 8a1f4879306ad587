// The default configuration's placement (issue 30): fragmentation-aware for
// GPU shares, whole nodes kept for whole-node jobs, with no tuning and no
// target workload given (the coordinator observes it from the running and
// waiting tasks). Each case would place otherwise under the old default
// (binpack) or under spread, so a default that stops being
// fragmentation-aware fails here.
#include <gtest/gtest.h>

#include <set>

#include "control/scheduler/scenario.h"

namespace gpool::scheduler {
namespace {

using namespace testing;  // NOLINT: the scenario builders
using topology::ClusterView;

// A node of GPUs with 1000 MiB each, so a share's MiB are its thousandths.
topology::NodeView ShareNode(std::string name, std::vector<uint64_t> used_mib) {
  topology::NodeView node = MakeNode(std::move(name), static_cast<uint32_t>(used_mib.size()));
  for (size_t g = 0; g < used_mib.size(); ++g) {
    node.gpus[g].memory_mib = 1000;
    node.gpus[g].tenants = used_mib[g] > 0 ? 1 : 0;
    node.gpus[g].memory_used_mib = used_mib[g];
  }
  return node;
}

TEST(DefaultPlacementTest, TheDefaultStrategyIsFragmentation) {
  EXPECT_EQ(SchedulerConfig{}.node_order.strategy, Strategy::kFragmentation);
}

// Whole-node jobs still get whole nodes: an 8-GPU job and a 1-GPU job wait,
// one node has a GPU taken. The 1-GPU task goes beside the running one and
// the 8-GPU job gets the idle node, as binpack places them; spread would put
// the 1-GPU task on the idle node and leave the 8-GPU job nowhere to go.
TEST(DefaultPlacementTest, WholeNodeJobsKeepWholeNodes) {
  ClusterView view;
  view.nodes = {MakeNode("idle", 8), MakeNode("used", 8)};
  view.running = {Occupy(view, 9, 0, "used", 1, "default")};
  view.pending = {JobBuilder(1, "default", 1, 1).job, JobBuilder(2, "default", 1, 8).job};
  for (const SchedulerConfig& config : {SchedulerConfig{}, WithStrategy(Strategy::kBinpack)}) {
    const Plan plan = Schedule(view, config);
    ASSERT_EQ(plan.binds.size(), 2u) << StrategyName(config.node_order.strategy);
    for (const auto& bind : plan.binds) {
      EXPECT_EQ(bind.node, bind.job == JobId(1) ? "used" : "idle") << StrategyName(config.node_order.strategy);
    }
  }
  EXPECT_EQ(Schedule(view, WithStrategy(Strategy::kSpread)).binds.size(), 1u);
}

// Shares pack by what the workload will ask for. The running shares are
// 200s, and a 300 waits; n1 has 600 free on one device and 400 on the other.
// binpack takes the tighter fit (400, leaving 100 that nothing takes); the
// default leaves the 400 to two 200s and puts the 300 where 300 is left,
// which a 300 or a 200 still takes.
TEST(DefaultPlacementTest, SharesFillTheRoomTheWorkloadFills) {
  ClusterView view;
  view.nodes = {ShareNode("n1", {400, 600})};
  auto share = [&](uint64_t job, uint64_t mib) {
    topology::RunningTask task = Occupy(view, job, 0, "n1", 0, "default");
    task.gpus = 1;
    task.gpu_memory_mib = mib;
    return task;
  };
  // The devices' loads say what is used; the running tasks tell the observed workload its shapes.
  for (uint64_t job = 11; job < 16; ++job) view.running.push_back(share(job, 200));
  view.pending = {JobBuilder(1, "default", 1, 1).Share(300).job};
  const Plan by_default = Schedule(view, SchedulerConfig{});
  ASSERT_EQ(by_default.binds.size(), 1u);
  EXPECT_EQ(by_default.binds[0].gpu_indices, std::vector<uint32_t>{0});
  const Plan binpack = Schedule(view, WithStrategy(Strategy::kBinpack));
  ASSERT_EQ(binpack.binds.size(), 1u);
  EXPECT_EQ(binpack.binds[0].gpu_indices, std::vector<uint32_t>{1});
}

// The default remembers a node's score per task shape until the node
// changes: two 500 shares of one gang, on a node whose two devices have 500
// free each. The second must see that the first took a device (a stale score
// would send it to the same, now full, device).
TEST(DefaultPlacementTest, AGangSeesWhatItsFirstTaskTook) {
  ClusterView view;
  view.nodes = {ShareNode("n1", {500, 500})};
  view.workload = {{1, 500, 1000, "", 1.0}};
  view.pending = {JobBuilder(1, "default", 2, 1).Share(500).job};
  const Plan plan = Schedule(view, SchedulerConfig{});
  ASSERT_EQ(plan.binds.size(), 2u);
  std::set<uint32_t> devices;
  for (const auto& bind : plan.binds) {
    ASSERT_EQ(bind.gpu_indices.size(), 1u);
    devices.insert(bind.gpu_indices.front());
  }
  EXPECT_EQ(devices, (std::set<uint32_t>{0, 1}));
}

}  // namespace
}  // namespace gpool::scheduler
