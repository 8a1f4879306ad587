// The fragmentation measure (hand-computed cases), the target workload,
// and the node-order strategies that use it or compare with it.
#include "control/scheduler/fragmentation.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "control/scheduler/scenario.h"
#include "control/scheduler/session.h"

namespace gpool::scheduler {
namespace {

using namespace testing;  // NOLINT: the scenario builders
using topology::ClusterView;
using topology::WorkloadShape;

NodeFree Free(uint64_t cpu, std::vector<uint32_t> gpus, std::string_view model = "A100", uint64_t memory_mib = 0) {
  return NodeFree{cpu, model, std::move(gpus), memory_mib};
}

TEST(FragmentationTest, FittingShapeStrandsOnlyDevicesTooFullForIt) {
  // A half-GPU shape fits (one device has 800 free); the 300 left on the other is stranded.
  const std::vector<WorkloadShape> half = {{1, 500, 1000, "", 1.0}};
  EXPECT_DOUBLE_EQ(NodeFragmentation(Free(8000, {800, 300}), half), 300);
  // A whole-GPU shape on the same node does not fit: everything free is stranded.
  const std::vector<WorkloadShape> whole = {{1, 1000, 1000, "", 1.0}};
  EXPECT_DOUBLE_EQ(NodeFragmentation(Free(8000, {800, 300}), whole), 1100);
  // With an idle device it fits; the partial ones are stranded.
  EXPECT_DOUBLE_EQ(NodeFragmentation(Free(8000, {1000, 800, 300}), whole), 1100);
}

TEST(FragmentationTest, ShapesThatCannotRunStrandEverythingFree) {
  const double all = 1000 + 1000;
  EXPECT_DOUBLE_EQ(NodeFragmentation(Free(8000, {1000, 1000}), {{0, 1000, 1000, "", 1.0}}), all);  // CPU-only
  EXPECT_DOUBLE_EQ(NodeFragmentation(Free(8000, {1000, 1000}), {{4, 1000, 1000, "", 1.0}}), all);  // too many GPUs
  EXPECT_DOUBLE_EQ(NodeFragmentation(Free(500, {1000, 1000}), {{1, 1000, 1000, "", 1.0}}), all);   // CPU short
  EXPECT_DOUBLE_EQ(NodeFragmentation(Free(8000, {1000, 1000}), {{1, 1000, 1000, "T4|V100", 1.0}}), all);  // model
  EXPECT_DOUBLE_EQ(NodeFragmentation(Free(8000, {1000, 1000}), {{1, 1000, 1000, "T4|A100", 1.0}}), 0);
}

TEST(FragmentationTest, WeightsMixShapes) {
  const std::vector<WorkloadShape> mix = {{1, 500, 0, "", 0.75}, {2, 1000, 0, "", 0.25}};
  // Half shape: 300 stranded; two whole GPUs: do not fit, 1100 stranded.
  EXPECT_DOUBLE_EQ(NodeFragmentation(Free(8000, {800, 300}), mix), 0.75 * 300 + 0.25 * 1100);
  EXPECT_DOUBLE_EQ(NodeFragmentation(Free(8000, {0, 0}), mix), 0);
}

TEST(PackedFragmentationTest, CountsWhatIsLeftAfterPackingEachShape) {
  // 300 shares: 800 takes two (200 left), 300 takes one: 200 stranded.
  const std::vector<WorkloadShape> share = {{1, 300, 1000, "", 1.0}};
  EXPECT_DOUBLE_EQ(PackedFragmentation(Free(8000, {800, 300}), share), 200);
  // FGD's measure sees none stranded: both devices take one.
  EXPECT_DOUBLE_EQ(NodeFragmentation(Free(8000, {800, 300}), share), 0);
  // CPU bounds the count: 1500 milli-CPU runs one task of 1000.
  EXPECT_DOUBLE_EQ(PackedFragmentation(Free(1500, {800, 300}), share), 1100 - 300);
  // A whole-GPU shape that fits is left to FGD's measure, which already
  // counts the partial device it strands; counted here too it weighed twice.
  const std::vector<WorkloadShape> pair = {{2, 1000, 0, "", 1.0}};
  EXPECT_DOUBLE_EQ(PackedFragmentation(Free(8000, {1000, 1000, 1000, 500}), pair), 0);
  EXPECT_DOUBLE_EQ(NodeFragmentation(Free(8000, {1000, 1000, 1000, 500}), pair), 500);
  // One that cannot run (CPU) strands everything here as well.
  EXPECT_DOUBLE_EQ(PackedFragmentation(Free(8000, {1000, 1000}), {{2, 1000, 9000, "", 1.0}}), 2000);
  // Shapes that cannot run strand everything, as in FGD's measure.
  EXPECT_DOUBLE_EQ(PackedFragmentation(Free(8000, {1000, 1000}), {{0, 1000, 1000, "", 1.0}}), 2000);
  EXPECT_DOUBLE_EQ(PackedFragmentation(Free(8000, {1000, 1000}), {{1, 1000, 1000, "T4", 1.0}}), 2000);
  EXPECT_DOUBLE_EQ(PackedFragmentation(Free(8000, {0, 0}), share), 0);
}

TEST(CombinedFragmentationTest, AddsWhatEachMeasureSees) {
  const std::vector<WorkloadShape> share = {{1, 300, 1000, "", 1.0}};
  // FGD's measure sees none stranded. Priced, a 300 costs a third of a device:
  // the 800 takes two (800 - 667), the 300 one (300 - 333).
  const FragmentationParts small = CombinedFragmentation(Free(8000, {800, 300}), share, {}, SharePrices(share));
  EXPECT_NEAR(small.now, 0, 1e-9);
  EXPECT_NEAR(small.eventual, 100, 1e-9);
  // A 700 share costs a device: the 800 takes one (800 - 1000), the 300 none,
  // and FGD's measure strands the 300 device too.
  const std::vector<WorkloadShape> big = {{1, 700, 1000, "", 1.0}};
  const FragmentationParts large = CombinedFragmentation(Free(8000, {800, 300}), big, {}, SharePrices(big));
  EXPECT_NEAR(large.now, 300, 1e-9);
  EXPECT_NEAR(large.eventual, -200 + 300, 1e-9);
  const FragmentationParts full = CombinedFragmentation(Free(8000, {0, 0}), big, {}, SharePrices(big));
  EXPECT_DOUBLE_EQ(full.now, 0);
  EXPECT_DOUBLE_EQ(full.eventual, 0);
}

// A 320 share for a node with 530 free on one device (beside a 470) and 350
// on another (beside a 650), with 470s, 320s and 650s to come. The packing
// pairs 470s, 650s with 320s, and the 320s left over go three to a device:
// the 350 is a 320's room, the 530 a 470's.
TEST(PricedFragmentationTest, CountsTheRoomAnOptimalPackingUses) {
  const std::vector<WorkloadShape> workload = {{1, 470, 1000, "", 0.4}, {1, 320, 1000, "", 0.4}, {1, 650, 1000, "", 0.2}};
  const SharePrices prices(workload);
  ASSERT_NEAR(prices.PriceOf(470), 0.5, 1e-9);
  ASSERT_NEAR(prices.PriceOf(320), 1.0 / 3, 1e-9);
  ASSERT_NEAR(prices.PriceOf(650), 2.0 / 3, 1e-9);
  const double into_530 = PricedFragmentation(Free(8000, {210, 350}), workload, prices);
  const double into_350 = PricedFragmentation(Free(8000, {530, 30}), workload, prices);
  EXPECT_NEAR(into_530, 210 + (350 - 1000.0 / 3), 1e-9);
  EXPECT_NEAR(into_350, (530 - 500) + 30, 1e-9);
  EXPECT_LT(into_350, into_530);
  // A device no shape can use by the node's CPU, host memory or model strands all its room.
  EXPECT_DOUBLE_EQ(PricedFragmentation(Free(500, {350}), workload, prices), 350);
  EXPECT_DOUBLE_EQ(PricedFragmentation(Free(8000, {1000}), {{1, 1000, 1000, "T4", 1.0}}, prices), 1000);
  EXPECT_DOUBLE_EQ(PricedFragmentation(Free(8000, {1000, 0}), workload, prices), 0);
}

TEST(CombinedFragmentationTest, TurnsFromPricedToPackedAsCpuRunsShort) {
  const std::vector<WorkloadShape> workload = {{1, 300, 1000, "", 0.5}, {0, 1000, 4000, "", 0.5}};
  const SharePrices prices(workload);
  const NodeFree node = Free(64000, {800, 1000});
  const double fgd = NodeFragmentation(node, workload);
  const double packed = PackedFragmentation(node, workload);
  const double priced = PricedFragmentation(node, workload, prices);
  ASSERT_NE(packed, priced);
  for (const double claimed : {0.0, 0.25, 1.0}) {
    const CpuOnlyClaim claim{claimed, 0};
    const FragmentationParts parts = CombinedFragmentation(node, workload, claim, prices);
    EXPECT_DOUBLE_EQ(parts.eventual,
                     HostStrandedFragmentation(node, workload, claim) + (1 - claimed) * priced + claimed * packed)
        << claimed;
    EXPECT_DOUBLE_EQ(parts.now, fgd) << claimed;
  }
  // Host memory short counts as well: the scarcer decides.
  const FragmentationParts memory_short = CombinedFragmentation(node, workload, CpuOnlyClaim{0, 1}, prices);
  EXPECT_DOUBLE_EQ(memory_short.eventual, HostStrandedFragmentation(node, workload, CpuOnlyClaim{0, 1}) + packed);
  EXPECT_DOUBLE_EQ(memory_short.now, fgd);
}

TEST(HostStrandedFragmentationTest, StrandsTheGpuShareTheFreeCpuCannotFeed) {
  // Half the tasks take a GPU and 10 cores, half a 500 share and 2 cores:
  // 750 of GPU share for every 6 cores, so 16 free cores feed 2000.
  const std::vector<WorkloadShape> workload = {{1, 1000, 10000, "", 0.5}, {1, 500, 2000, "", 0.5}};
  EXPECT_DOUBLE_EQ(HostStrandedFragmentation(Free(16000, {1000, 1000, 1000, 1000}), workload), 2000);
  EXPECT_DOUBLE_EQ(HostStrandedFragmentation(Free(40000, {1000, 1000, 1000, 1000}), workload), 0);
  EXPECT_DOUBLE_EQ(HostStrandedFragmentation(Free(0, {1000, 300}), workload), 1300);
  // CPU-only tasks do not change the ratio unless claimed (below); a workload asking no CPU strands nothing.
  auto with_cpu_only = workload;
  with_cpu_only.push_back({0, 1000, 64000, "", 0.5});
  EXPECT_DOUBLE_EQ(HostStrandedFragmentation(Free(16000, {1000, 1000, 1000, 1000}), with_cpu_only), 2000);
  EXPECT_DOUBLE_EQ(HostStrandedFragmentation(Free(0, {1000}), {{1, 1000, 0, "", 1.0}}), 0);
  // It is part of the strategy's measure, wasted for good: nothing gives the CPU back.
  const SharePrices prices(workload);
  const FragmentationParts parts = CombinedFragmentation(Free(16000, {1000, 1000, 1000, 1000}), workload, {}, prices);
  EXPECT_DOUBLE_EQ(parts.now, NodeFragmentation(Free(16000, {1000, 1000, 1000, 1000}), workload));
  EXPECT_DOUBLE_EQ(parts.eventual, PricedFragmentation(Free(16000, {1000, 1000, 1000, 1000}), workload, prices) + 2000);
}

TEST(HostStrandedFragmentationTest, ChargesTheClaimedPartOfTheCpuOnlyTasks) {
  // Half the tasks take a GPU and 10 cores, half are CPU-only with 20: per
  // task, 500 of GPU share, 5 cores for it and 10 for CPU-only work.
  const std::vector<WorkloadShape> workload = {{1, 1000, 10000, "", 0.5}, {0, 1000, 20000, "", 0.5}};
  const NodeFree node = Free(40000, {1000, 1000, 1000, 1000});
  // Unclaimed, 40 cores feed 4000.
  EXPECT_DOUBLE_EQ(HostStrandedFragmentation(node, workload), 0);
  // Half claimed: 10 cores per 500, so 40 cores feed 2000.
  EXPECT_DOUBLE_EQ(HostStrandedFragmentation(node, workload, CpuOnlyClaim{0.5, 0}), 2000);
  // All claimed: 15 cores per 500, so 40 cores feed 1333.3.
  EXPECT_NEAR(HostStrandedFragmentation(node, workload, CpuOnlyClaim{1, 0}), 4000 - 40000.0 / 30, 1e-9);
  EXPECT_NEAR(HostStrandedFragmentation(node, workload, CpuOnlyClaim{1, 0}) - HostStrandedFragmentation(node, workload),
              4000 - 40000.0 / 30, 1e-9);
}

TEST(CpuOnlyClaimTest, IsWhatTheSpareCpuCannotHold) {
  // Per task: 500 of GPU share, 5 cores for it, 10 cores of CPU-only work;
  // memory likewise, 1 GiB and 2 GiB.
  const std::vector<WorkloadShape> workload = {{1, 1000, 10000, "", 0.5, 2048}, {0, 1000, 20000, "", 0.5, 4096}};
  // 4000 free share is 8 tasks: 40 cores for them and 80 for CPU-only work.
  EXPECT_DOUBLE_EQ(CpuOnlyClaimOf(workload, {120000, 1e9, 4000}).cpu, 0);   // 80 spare: all held
  EXPECT_DOUBLE_EQ(CpuOnlyClaimOf(workload, {80000, 1e9, 4000}).cpu, 0.5);  // 40 spare: half
  EXPECT_DOUBLE_EQ(CpuOnlyClaimOf(workload, {30000, 1e9, 4000}).cpu, 1);    // none spare
  EXPECT_DOUBLE_EQ(CpuOnlyClaimOf(workload, {30000, 1e9, 4000}).memory, 0);
  // 8 GiB for them, 16 GiB for CPU-only work: 12 GiB free leaves 4 spare.
  EXPECT_DOUBLE_EQ(CpuOnlyClaimOf(workload, {1e9, 12288, 4000}).memory, 0.75);
  // No free GPU share, or no CPU-only work: nothing to claim.
  EXPECT_DOUBLE_EQ(CpuOnlyClaimOf(workload, {0, 0, 0}).cpu, 0);
  EXPECT_DOUBLE_EQ(CpuOnlyClaimOf({{1, 1000, 10000, "", 1.0}}, {0, 0, 4000}).cpu, 0);
}

TEST(HostStrandedFragmentationTest, TheScarcerOfCpuAndMemoryDecides) {
  // 1000 of GPU share for every 10 cores and 40 GiB of memory.
  const std::vector<WorkloadShape> workload = {{1, 1000, 10000, "", 1.0, 40960}};
  const std::vector<uint32_t> four = {1000, 1000, 1000, 1000};
  // 40 cores feed all four GPUs; 80 GiB feeds two.
  EXPECT_DOUBLE_EQ(HostStrandedFragmentation(Free(40000, four, "A100", 81920), workload), 2000);
  // 20 cores feed two, 160 GiB four: CPU decides.
  EXPECT_DOUBLE_EQ(HostStrandedFragmentation(Free(20000, four, "A100", 163840), workload), 2000);
  EXPECT_DOUBLE_EQ(HostStrandedFragmentation(Free(40000, four, "A100", 163840), workload), 0);
  // A workload that names no memory is fed by CPU alone.
  EXPECT_DOUBLE_EQ(HostStrandedFragmentation(Free(40000, four), {{1, 1000, 10000, "", 1.0}}), 0);
}

TEST(FragmentationTest, TargetWorkloadWeighsEveryShapeAndFgdKeepsTheCommonest) {
  std::vector<WorkloadShape> samples;
  for (int i = 0; i < 4; ++i) samples.push_back({8, 1000, 64000, "", 0});
  for (int i = 0; i < 90; ++i) samples.push_back({1, 1000, 4000, "", 0, i < 45 ? 1000u : 3000u});
  for (int i = 0; i < 6; ++i) samples.push_back({1, 500, 2000, "", 0});
  const auto all = TargetWorkload(samples);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].gpus, 1u);  // most frequent first
  EXPECT_EQ(all[0].gpu_milli, 1000u);
  EXPECT_DOUBLE_EQ(all[0].weight, 0.90);
  EXPECT_EQ(all[0].memory_mib, 2000u);  // memory does not split a shape: the mean
  EXPECT_EQ(all[1].gpu_milli, 500u);
  EXPECT_DOUBLE_EQ(all[1].weight, 0.06);
  EXPECT_EQ(all[2].gpus, 8u);
  EXPECT_DOUBLE_EQ(all[2].weight, 0.04);

  const auto kept = CommonestShapes(all, kFgdCoverage);
  ASSERT_EQ(kept.size(), 2u);  // 90 + 6 cover 96 %; the 8-GPU shape is left out
  EXPECT_DOUBLE_EQ(kept[0].weight, 90.0 / 96.0);
  EXPECT_DOUBLE_EQ(kept[1].weight, 6.0 / 96.0);
  // A cut the first shapes meet exactly stops there.
  EXPECT_EQ(CommonestShapes(all, 0.96).size(), 2u);
  EXPECT_EQ(CommonestShapes(all, 1.0).size(), 3u);
  EXPECT_TRUE(CommonestShapes({}, kFgdCoverage).empty());
}

TEST(FragmentationTest, ScoredShapesAreCappedMostFrequentFirst) {
  std::vector<WorkloadShape> samples;
  // 300 distinct CPU sizes, the first ten twice as common as the rest.
  for (uint64_t cpu = 1; cpu <= 300; ++cpu) {
    for (int copy = 0; copy < (cpu <= 10 ? 2 : 1); ++copy) samples.push_back({1, 1000, cpu * 100, "", 0});
  }
  const auto all = TargetWorkload(samples);
  ASSERT_EQ(all.size(), 300u);
  const auto kept = CommonestShapes(all, 1.0, kMaxScoredShapes);
  ASSERT_EQ(kept.size(), kMaxScoredShapes);
  for (uint64_t cpu = 1; cpu <= 10; ++cpu) {
    EXPECT_TRUE(std::any_of(kept.begin(), kept.end(), [&](const auto& s) { return s.cpu_milli == cpu * 100; }));
  }
  double sum = 0;
  for (const auto& shape : kept) sum += shape.weight;
  EXPECT_NEAR(sum, 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(kept[0].weight / kept.back().weight, 2.0);
  EXPECT_EQ(CommonestShapes(all, 1.0, 1).size(), 1u);
}

TEST(FragmentationTest, FreeMilliFollowsTheDeviceLoad) {
  topology::GpuSlot gpu{0, "A100", 1000, true, false};
  topology::DeviceLoad load;
  EXPECT_EQ(FreeMilli(gpu, load, true), 1000u);
  load.tenants = 2;
  load.memory_used_mib = 700;
  EXPECT_EQ(FreeMilli(gpu, load, false), 300u);
  load.compute_used_pct = 80;  // compute is scarcer than memory now
  EXPECT_EQ(FreeMilli(gpu, load, false), 200u);
  gpu.allocated = true;
  EXPECT_EQ(FreeMilli(gpu, load, false), 0u);
}

SchedulerConfig With(Strategy strategy) {
  SchedulerConfig config;
  config.node_order.strategy = strategy;
  config.node_order.candidates = 1000;
  return config;
}

// One 8-GPU node with one GPU taken and an idle one: the workload has
// 8-GPU tasks, so a 1-GPU task goes to the used node (the idle node stays
// whole for them), where binpack would do the same but spread would not.
TEST(FragmentationStrategyTest, KeepsWholeNodesForTheLargeShapes) {
  ClusterView view;
  view.nodes = {MakeNode("idle", 8), MakeNode("used", 8)};
  view.running = {Occupy(view, 9, 0, "used", 1, "default")};
  view.workload = {{1, 1000, 1000, "", 0.5}, {8, 1000, 1000, "", 0.5}};
  view.pending = {JobBuilder(1, "default", 1, 1).job};
  for (Strategy strategy : {Strategy::kFragmentation, Strategy::kFgd}) {
    const Plan plan = Schedule(view, With(strategy));
    ASSERT_EQ(plan.binds.size(), 1u) << StrategyName(strategy);
    EXPECT_EQ(plan.binds[0].node, "used") << StrategyName(strategy);
  }
  EXPECT_EQ(Schedule(view, With(Strategy::kSpread)).binds[0].node, "idle");
}

// A share goes on the device where it strands the least: with 600 and 400
// left, a 400 share fills the 400 device exactly (nothing stranded), which
// best fit also does, but a 300 share goes to the 600 device when the
// workload's shares are 300 (600 - 300 = 300 still takes one; 400 - 300 = 100 would not).
TEST(FragmentationStrategyTest, ShareTakesTheDeviceThatStrandsLeast) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 2)};
  for (auto& gpu : view.nodes[0].gpus) gpu.memory_mib = 1000;
  view.nodes[0].gpus[0].tenants = 1;
  view.nodes[0].gpus[0].memory_used_mib = 400;  // 600 free
  view.nodes[0].gpus[1].tenants = 1;
  view.nodes[0].gpus[1].memory_used_mib = 600;  // 400 free
  view.workload = {{1, 300, 1000, "", 1.0}};
  view.pending = {JobBuilder(1, "default", 1, 1).Share(300).job};
  const Plan fragmentation = Schedule(view, With(Strategy::kFragmentation));
  ASSERT_EQ(fragmentation.binds.size(), 1u);
  EXPECT_EQ(fragmentation.binds[0].gpu_indices, std::vector<uint32_t>{0});
  // binpack's device choice (the default's until fragmentation became it).
  const Plan best_fit = Schedule(view, With(Strategy::kBinpack));
  ASSERT_EQ(best_fit.binds.size(), 1u);
  EXPECT_EQ(best_fit.binds[0].gpu_indices, std::vector<uint32_t>{1});
}

// The measure case above on the scheduler: a 230 share goes beside the 550
// share, leaving 220 for a 220, not beside the 650 (120 left for nothing).
TEST(FragmentationStrategyTest, ShareLeavesARemnantTheWorkloadFills) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 2)};
  for (auto& gpu : view.nodes[0].gpus) {
    gpu.memory_mib = 1000;
    gpu.tenants = 1;
  }
  view.nodes[0].gpus[0].memory_used_mib = 650;
  view.nodes[0].gpus[1].memory_used_mib = 550;
  view.workload = {{1, 320, 1000, "", 0.4}, {1, 230, 1000, "", 0.3}, {1, 220, 1000, "", 0.3}};
  view.pending = {JobBuilder(1, "default", 1, 1).Share(230).job};
  const Plan plan = Schedule(view, With(Strategy::kFragmentation));
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].gpu_indices, std::vector<uint32_t>{1});
  // FGD's measure alone prefers the other device.
  const Plan fgd = Schedule(view, With(Strategy::kFgd));
  ASSERT_EQ(fgd.binds.size(), 1u);
  EXPECT_EQ(fgd.binds[0].gpu_indices, std::vector<uint32_t>{0});
}

// A 320 share where one node has 530 free beside a 470 and another an idle
// device, with 470s, 320s and 650s to come beside whole-GPU tasks. The
// packing puts a 650 with each 320 and 470s in pairs, so the room beside
// the 470 is a 470's: a 320 there leaves 210 that nothing fills. FGD's
// measure sees the opposite: the idle device would be stranded for every
// whole-GPU task now. What is wasted for good decides; what is stranded now
// only among placements that waste the same.
TEST(FragmentationStrategyTest, ShareOpensADeviceRatherThanSpoilARoom) {
  const std::vector<WorkloadShape> workload = {
      {1, 470, 1000, "", 0.24}, {1, 320, 1000, "", 0.24}, {1, 650, 1000, "", 0.12}, {1, 1000, 1000, "", 0.4}};
  const SharePrices prices(workload);
  const FragmentationParts before = CombinedFragmentation(Free(64000, {530, 1000}), workload, {}, prices);
  const FragmentationParts beside_470 = CombinedFragmentation(Free(64000, {210, 1000}), workload, {}, prices);
  const FragmentationParts on_idle = CombinedFragmentation(Free(64000, {530, 680}), workload, {}, prices);
  EXPECT_NEAR(beside_470.eventual - before.eventual, 180, 1e-6);
  EXPECT_NEAR(on_idle.eventual - before.eventual, 680 - 2000.0 / 3, 1e-6);
  ASSERT_LT(beside_470.now, on_idle.now);
  // Summed, FGD's part would win.
  ASSERT_LT(beside_470.eventual + beside_470.now, on_idle.eventual + on_idle.now);

  ClusterView view;
  view.nodes = {MakeNode("room", 1), MakeNode("idle", 1)};
  for (auto& node : view.nodes) node.gpus[0].memory_mib = 1000;
  view.nodes[0].gpus[0].tenants = 1;
  view.nodes[0].gpus[0].memory_used_mib = 470;
  view.workload = workload;
  view.pending = {JobBuilder(1, "default", 1, 1).Share(320).job};
  const Plan plan = Schedule(view, With(Strategy::kFragmentation));
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].node, "idle");
  // A 470 still takes the room: both waste the same in the end, and there it strands less now.
  view.pending = {JobBuilder(1, "default", 1, 1).Share(470).job};
  const Plan pair = Schedule(view, With(Strategy::kFragmentation));
  ASSERT_EQ(pair.binds.size(), 1u);
  EXPECT_EQ(pair.binds[0].node, "room");
}

// The artifact's integer score: 50 for no change, and growths a few
// hundredths of a GPU apart land on the same value.
TEST(FgdScoreTest, IsTheArtifactsKubernetesScore) {
  EXPECT_EQ(FgdScore(0), 50);
  EXPECT_EQ(FgdScore(-25.5), 50);
  EXPECT_EQ(FgdScore(10), 49);
  EXPECT_EQ(FgdScore(-1000), 73);
  EXPECT_EQ(FgdScore(1000), 26);
  EXPECT_EQ(FgdScore(-1e9), 100);
  EXPECT_EQ(FgdScore(1e9), 0);
}

// A 300 share lowers F by 25.5 on "b" (its 305 device strands less for the
// 10 % of 310 shares once filled) and by nothing on "a" (idle). Both score
// 50, so fgd takes the first node and, within a node, the first device, as
// the artifact's scheduler does; the fragmentation strategy takes the
// lower growth.
TEST(FragmentationStrategyTest, FgdGivesNearTiesToTheFirstNodeAndDevice) {
  auto device_with_free = [](topology::NodeView& node, size_t gpu, uint64_t free) {
    node.gpus[gpu].memory_mib = 1000;
    node.gpus[gpu].tenants = free < 1000 ? 1 : 0;
    node.gpus[gpu].memory_used_mib = 1000 - free;
  };
  ClusterView view;
  view.nodes = {MakeNode("a", 1), MakeNode("b", 1)};
  device_with_free(view.nodes[0], 0, 1000);
  device_with_free(view.nodes[1], 0, 305);
  view.workload = {{1, 300, 1000, "", 0.9}, {1, 310, 1000, "", 0.1}};
  view.pending = {JobBuilder(1, "default", 1, 1).Share(300).job};
  const Plan fgd = Schedule(view, With(Strategy::kFgd));
  ASSERT_EQ(fgd.binds.size(), 1u);
  EXPECT_EQ(fgd.binds[0].node, "a");
  const Plan fragmentation = Schedule(view, With(Strategy::kFragmentation));
  ASSERT_EQ(fragmentation.binds.size(), 1u);
  EXPECT_EQ(fragmentation.binds[0].node, "b");

  ClusterView one;
  one.nodes = {MakeNode("n", 2)};
  device_with_free(one.nodes[0], 0, 1000);
  device_with_free(one.nodes[0], 1, 305);
  one.workload = view.workload;
  one.pending = view.pending;
  const Plan device = Schedule(one, With(Strategy::kFgd));
  ASSERT_EQ(device.binds.size(), 1u);
  EXPECT_EQ(device.binds[0].gpu_indices, std::vector<uint32_t>{0});
  const Plan tighter = Schedule(one, With(Strategy::kFragmentation));
  ASSERT_EQ(tighter.binds.size(), 1u);
  EXPECT_EQ(tighter.binds[0].gpu_indices, std::vector<uint32_t>{1});
}

// A CPU-only task fits on both nodes, and the shapes that make up 96 % of
// tasks fit on both afterwards: only a rare one (4 %, under FGD's cut) needs
// the 8 CPUs the smaller node would lose. The strategy weighs every shape,
// so it keeps them; without that shape nothing is stranded either way and
// the tie goes to the fuller node.
TEST(FragmentationStrategyTest, RareShapesCount) {
  ClusterView view;
  view.nodes = {MakeNode("roomy", 2, "public", "A100", 12'000), MakeNode("tight", 2, "public", "A100", 9'000)};
  view.pending = {JobBuilder(1, "default", 1, 0).job};
  view.pending[0].tasks[0].resources.cpu_milli = 2'000;
  view.workload = {{1, 1000, 1000, "", 0.96}, {1, 1000, 8000, "", 0.04}};
  const Plan plan = Schedule(view, With(Strategy::kFragmentation));
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].node, "roomy");
  view.workload = {{1, 1000, 1000, "", 1.0}};
  const Plan common_only = Schedule(view, With(Strategy::kFragmentation));
  ASSERT_EQ(common_only.binds.size(), 1u);
  EXPECT_EQ(common_only.binds[0].node, "tight");
}

// A 10-core GPU task between a 1-GPU node with 12 cores and a 2-GPU node
// with 30: either keeps the rest fed at 5 cores per 500 of GPU share, so
// the tie goes to the fuller node. Without spare CPU in the cluster, the
// CPU-only tasks (20 cores per 500 of GPU share arriving) will take CPU
// beside the GPUs too, and the 2-GPU node is where the task leaves less
// GPU share unfed. A CPU-only node with 200 free cores is that spare.
TEST(FragmentationStrategyTest, CpuOnlyTasksCountAgainstTheGpusFeedOnlyWithoutSpareCpu) {
  ClusterView view;
  view.nodes = {MakeNode("small", 1, "public", "A100", 12'000), MakeNode("large", 2, "public", "A100", 30'000)};
  view.workload = {{1, 1000, 10'000, "", 0.5}, {0, 1000, 20'000, "", 0.5}};
  view.pending = {JobBuilder(1, "default", 1, 1).job};
  view.pending[0].tasks[0].resources.cpu_milli = 10'000;
  const Plan short_of_cpu = Schedule(view, With(Strategy::kFragmentation));
  ASSERT_EQ(short_of_cpu.binds.size(), 1u);
  EXPECT_EQ(short_of_cpu.binds[0].node, "large");
  view.nodes.push_back(MakeNode("cpu", 0, "public", "A100", 200'000));
  const Plan with_spare = Schedule(view, With(Strategy::kFragmentation));
  ASSERT_EQ(with_spare.binds.size(), 1u);
  EXPECT_EQ(with_spare.binds[0].node, "small");
}

// Without a workload in the view, the running and waiting tasks are it.
TEST(FragmentationStrategyTest, ObservedWorkloadComesFromRunningTasks) {
  ClusterView view;
  view.nodes = {MakeNode("idle", 8), MakeNode("used", 8)};
  view.running = {Occupy(view, 7, 0, "used", 1, "default")};
  for (int i = 0; i < 3; ++i) view.running.push_back(Occupy(view, 10 + i, 0, "idle2", 8, "default"));
  view.pending = {JobBuilder(1, "default", 1, 1).job};
  const Plan plan = Schedule(view, With(Strategy::kFragmentation));
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].node, "used");
}

TEST(StrategyScoresTest, BaselinesPlaceWhereTheirRuleSays) {
  ClusterView view;
  view.nodes = {MakeNode("idle", 8), MakeNode("used", 8), MakeNode("small", 2)};
  view.running = {Occupy(view, 9, 0, "used", 6, "default")};
  view.pending = {JobBuilder(1, "default", 1, 1).job};
  // Packing and best fit fill the used node; dot product prefers the node
  // whose free resources align least with the demand.
  EXPECT_EQ(Schedule(view, With(Strategy::kGpuPacking)).binds[0].node, "used");
  EXPECT_EQ(Schedule(view, With(Strategy::kBestFit)).binds[0].node, "used");
  // Clustering keeps requests of one shape together: the used node runs a
  // 6-GPU task, so a 1-GPU task goes to a node with no GPU task, the one
  // with the least GPU free (the 2-GPU node), and a 6-GPU task next to its like.
  EXPECT_EQ(Schedule(view, With(Strategy::kGpuClustering)).binds[0].node, "small");
  view.nodes = {MakeNode("idle", 8), MakeNode("used", 8)};
  view.running = {Occupy(view, 9, 0, "used", 1, "default")};
  view.pending = {JobBuilder(3, "default", 1, 1).job};
  EXPECT_EQ(Schedule(view, With(Strategy::kGpuClustering)).binds[0].node, "used");
  view.pending = {JobBuilder(1, "default", 1, 1).job};
  // Random placement is a pure function of the job and node: the same plan twice.
  const Plan once = Schedule(view, With(Strategy::kRandom));
  const Plan again = Schedule(view, With(Strategy::kRandom));
  ASSERT_EQ(once.binds.size(), 1u);
  EXPECT_EQ(once.binds[0].node, again.binds[0].node);
}

// The node the one pending task of `view` goes to under `strategy`, or ""
// when nothing is placed.
std::string PlacedOn(const ClusterView& view, Strategy strategy) {
  const Plan plan = Schedule(view, With(strategy));
  return plan.binds.size() == 1 ? plan.binds[0].node : "";
}

// The artifact's clustering groups every fraction of a GPU as one request,
// "a share": a 0.5 share joins a node running a 0.25 share rather than open
// an idle one, while a whole GPU keeps off it.
TEST(StrategyScoresTest, ClusteringTreatsAllSharesAsOneRequest) {
  ClusterView view;
  view.nodes = {MakeNode("idle", 2), MakeNode("shares", 2)};
  topology::RunningTask quarter = Occupy(view, 9, 0, "shares", 0, "default");
  quarter.gpus = 1;
  quarter.gpu_memory_mib = 81920 / 4;
  view.nodes[1].gpus[0].tenants = 1;
  view.nodes[1].gpus[0].memory_used_mib = 81920 / 4;
  view.running = {quarter};
  view.pending = {JobBuilder(1, "default", 1, 1).Share(81920 / 2).job};
  EXPECT_EQ(PlacedOn(view, Strategy::kGpuClustering), "shares");
  view.pending = {JobBuilder(2, "default", 1, 1).job};
  EXPECT_EQ(PlacedOn(view, Strategy::kGpuClustering), "idle");
}

// Dot product scores in whole hundredths as the artifact does: two nodes a
// few GPU-thousandths apart tie, and the first takes the task; further
// apart, the one whose free resources align least with the demand does.
TEST(StrategyScoresTest, DotProductGivesNearTiesToTheFirstNode) {
  ClusterView view;
  view.nodes = {MakeNode("a", 8), MakeNode("b", 8), MakeNode("big", 8)};
  view.nodes[0].cpu_milli_total = 128'000;
  view.nodes[0].cpu_milli_free = 40'000;
  view.nodes[1].cpu_milli_free = 39'000;
  view.nodes[2].cpu_milli_total = 128'000;
  view.nodes[2].cpu_milli_free = 128'000;
  view.pending = {JobBuilder(1, "default", 1, 1).job};
  view.pending[0].tasks[0].resources.cpu_milli = 8'000;
  EXPECT_EQ(PlacedOn(view, Strategy::kDotProduct), "a");
  view.nodes[0].cpu_milli_free = 100'000;
  EXPECT_EQ(PlacedOn(view, Strategy::kDotProduct), "b");
}

TEST(StrategyScoresTest, AnyOfModelsPlacesOnEitherAndChargesTheNodesModel) {
  ClusterView view;
  view.nodes = {MakeNode("t4", 2, "public", "T4"), MakeNode("v100", 2, "public", "V100M32")};
  view.pending = {JobBuilder(1, "default", 1, 2).Model("P100|V100M32").job};
  const Plan plan = Schedule(view, SchedulerConfig{});
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].node, "v100");
  view.pending = {JobBuilder(2, "default", 1, 1).Model("P100|A10").job};
  const Plan none = Schedule(view, SchedulerConfig{});
  EXPECT_TRUE(none.binds.empty());
  EXPECT_TRUE(AnyReasonContains(none, 2, "requested model"));
}

}  // namespace
}  // namespace gpool::scheduler
