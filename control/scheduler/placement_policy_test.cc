// Per-job placement policies (JobSpec.node_policy / gpu_policy, HAMi's
// per-pod node and GPU policies): binpack fills the fullest node or device
// first, spread the emptiest, and default keeps the configured strategy.
// Each case places the same work under both policies, so a policy that is
// ignored fails one of the two. The GPU policy covers NVIDIA shares, MIG
// instances and vendor shares alike.
#include <gtest/gtest.h>

#include <set>

#include "control/scheduler/scenario.h"

namespace gpool::scheduler {
namespace {

using namespace testing;  // NOLINT: the scenario builders
using topology::ClusterView;

topology::PendingJob WithPolicies(topology::PendingJob job, PlacementPolicy node, PlacementPolicy gpu) {
  job.node_policy = node;
  job.gpu_policy = gpu;
  return job;
}

std::set<std::string> NodesOf(const Plan& plan, uint64_t job) {
  std::set<std::string> nodes;
  for (const auto& bind : plan.binds) {
    if (bind.job.value() == job) nodes.insert(bind.node);
  }
  return nodes;
}

std::multiset<uint32_t> GpusOf(const Plan& plan, uint64_t job) {
  std::multiset<uint32_t> gpus;
  for (const auto& bind : plan.binds) {
    if (bind.job.value() != job) continue;
    gpus.insert(bind.gpu_indices.begin(), bind.gpu_indices.end());
  }
  return gpus;
}

// Adds a share tenant of `memory` MiB to GPU `index` of `node`.
void AddShareTenant(ClusterView& view, const std::string& node, uint32_t index, uint64_t memory) {
  for (auto& n : view.nodes) {
    if (n.name != node) continue;
    auto& gpu = n.gpus[index];
    ++gpu.tenants;
    gpu.memory_used_mib += memory;
    if (gpu.qos.empty()) gpu.qos = "best-effort";
  }
}

ClusterView ThreeEmptyNodes() {
  ClusterView view;
  view.nodes = {MakeNode("n1", 4), MakeNode("n2", 4), MakeNode("n3", 4)};
  return view;
}

TEST(PlacementPolicyTest, NodeSpreadPutsEachTaskOnItsOwnNode) {
  ClusterView view = ThreeEmptyNodes();
  view.pending = {WithPolicies(JobBuilder(1, "default", 3, 1), PlacementPolicy::kSpread, PlacementPolicy::kDefault)};
  const Plan plan = Schedule(view, Default());
  ASSERT_EQ(BindsOf(plan, 1), 3u);
  EXPECT_EQ(NodesOf(plan, 1), (std::set<std::string>{"n1", "n2", "n3"}));
}

TEST(PlacementPolicyTest, NodeBinpackPutsEveryTaskOnOneNode) {
  ClusterView view = ThreeEmptyNodes();
  view.pending = {WithPolicies(JobBuilder(1, "default", 3, 1), PlacementPolicy::kBinpack, PlacementPolicy::kDefault)};
  const Plan plan = Schedule(view, Default());
  ASSERT_EQ(BindsOf(plan, 1), 3u);
  EXPECT_EQ(NodesOf(plan, 1).size(), 1u);
}

TEST(PlacementPolicyTest, NodeBinpackTakesThePartlyUsedNodeAndSpreadAnEmptyOne) {
  for (const auto policy : {PlacementPolicy::kBinpack, PlacementPolicy::kSpread}) {
    ClusterView view = ThreeEmptyNodes();
    view.running = {Occupy(view, 9, 0, "n2", 2, "default")};
    view.pending = {WithPolicies(JobBuilder(1, "default", 1, 1), policy, PlacementPolicy::kDefault)};
    const Plan plan = Schedule(view, Default());
    ASSERT_EQ(BindsOf(plan, 1), 1u) << ToString(policy);
    if (policy == PlacementPolicy::kBinpack) {
      EXPECT_EQ(NodesOf(plan, 1), std::set<std::string>{"n2"});
    } else {
      EXPECT_NE(NodesOf(plan, 1), std::set<std::string>{"n2"});
    }
  }
}

// The job's policy overrides the configured strategy either way, and only
// for that job: a default job beside it keeps the cluster's strategy.
TEST(PlacementPolicyTest, JobPolicyOverridesTheConfiguredStrategyForItselfAlone) {
  ClusterView view = ThreeEmptyNodes();
  view.nodes.push_back(MakeNode("n4", 4));  // room for both, in either order
  view.pending = {WithPolicies(JobBuilder(1, "default", 3, 1), PlacementPolicy::kBinpack, PlacementPolicy::kDefault),
                  JobBuilder(2, "default", 3, 1)};
  const Plan plan = Schedule(view, WithStrategy(Strategy::kSpread));
  ASSERT_EQ(BindsOf(plan, 1), 3u);
  ASSERT_EQ(BindsOf(plan, 2), 3u);
  EXPECT_EQ(NodesOf(plan, 1).size(), 1u);
  EXPECT_EQ(NodesOf(plan, 2).size(), 3u);
}

TEST(PlacementPolicyTest, GpuSpreadPutsAShareOnTheEmptiestDeviceAndBinpackOnTheFullest) {
  for (const auto policy : {PlacementPolicy::kBinpack, PlacementPolicy::kSpread}) {
    ClusterView view;
    view.nodes = {MakeNode("n1", 3)};
    AddShareTenant(view, "n1", 1, 40960);
    AddShareTenant(view, "n1", 2, 20480);
    view.pending = {WithPolicies(JobBuilder(1, "default", 1, 1).Share(20480), PlacementPolicy::kDefault, policy)};
    const Plan plan = Schedule(view, Default());
    ASSERT_EQ(BindsOf(plan, 1), 1u) << ToString(policy);
    // Binpack: the fullest device that holds it; spread: the idle one.
    const uint32_t expected = policy == PlacementPolicy::kSpread ? 0 : 1;
    EXPECT_EQ(GpusOf(plan, 1), std::multiset<uint32_t>{expected}) << ToString(policy);
  }
}

TEST(PlacementPolicyTest, GpuSpreadGivesAJobsSharesTheirOwnDevicesAndBinpackOneDevice) {
  for (const auto policy : {PlacementPolicy::kBinpack, PlacementPolicy::kSpread}) {
    ClusterView view;
    view.nodes = {MakeNode("n1", 4)};
    view.pending = {WithPolicies(JobBuilder(1, "default", 3, 1).Share(10240), PlacementPolicy::kDefault, policy)};
    const Plan plan = Schedule(view, Default());
    ASSERT_EQ(BindsOf(plan, 1), 3u) << ToString(policy);
    const auto gpus = GpusOf(plan, 1);
    const std::set<uint32_t> distinct(gpus.begin(), gpus.end());
    EXPECT_EQ(distinct.size(), policy == PlacementPolicy::kSpread ? 3u : 1u) << ToString(policy);
  }
}

// Node and GPU policies are independent: spread nodes, packed devices.
TEST(PlacementPolicyTest, NodeAndGpuPoliciesCombine) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 2), MakeNode("n2", 2)};
  view.pending = {WithPolicies(JobBuilder(1, "default", 4, 1).Share(10240), PlacementPolicy::kSpread,
                               PlacementPolicy::kBinpack)};
  const Plan plan = Schedule(view, Default());
  ASSERT_EQ(BindsOf(plan, 1), 4u);
  EXPECT_EQ(NodesOf(plan, 1).size(), 2u);
  // Two shares per node, both on one device of it.
  std::map<std::string, std::set<uint32_t>> devices;
  for (const auto& bind : plan.binds) devices[bind.node].insert(bind.gpu_indices.begin(), bind.gpu_indices.end());
  for (const auto& [node, used] : devices) EXPECT_EQ(used.size(), 1u) << node;
}

// --- MIG instances and vendor shares (device_pick.h, vendor_rules.h) ---------------

// A node of dynamic-MIG A100-80GB GPUs; `instances[g]` are GPU g's instances in use.
topology::NodeView PolicyMigNode(const std::vector<std::vector<topology::MigSlot>>& instances) {
  auto node = MakeNode("m1", static_cast<uint32_t>(instances.size()), "public", "A100-SXM4-80GB");
  for (size_t g = 0; g < instances.size(); ++g) {
    node.gpus[g].mig_mode = "dynamic";
    node.gpus[g].mig = instances[g];
    node.gpus[g].tenants = static_cast<uint32_t>(instances[g].size());
  }
  return node;
}

// Where job 1's one 1g.10gb instance goes under `policy`.
std::multiset<uint32_t> MigGpuUnder(const topology::NodeView& node, PlacementPolicy policy) {
  ClusterView view;
  view.nodes = {node};
  view.pending = {WithPolicies(JobBuilder(1, "default", 1, 1).Mig("1g.10gb"), PlacementPolicy::kDefault, policy)};
  const Plan plan = Schedule(view, Default());
  EXPECT_EQ(BindsOf(plan, 1), 1u) << ToString(policy);
  return GpusOf(plan, 1);
}

// Default and binpack keep "a MIG device first, the smallest instance, the
// lowest slot" (GPU 0); spread takes the MIG device with the fewest instances
// in use (GPU 1), and neither switches the idle GPU 2 to MIG.
TEST(PlacementPolicyTest, MigSpreadTakesTheDeviceWithFewestInstancesAndBinpackTheFirst) {
  const auto node = PolicyMigNode({{{"1g.10gb", 0, true}, {"1g.10gb", 1, true}}, {{"3g.40gb", 4, true}}, {}});
  EXPECT_EQ(MigGpuUnder(node, PlacementPolicy::kDefault), std::multiset<uint32_t>{0});
  EXPECT_EQ(MigGpuUnder(node, PlacementPolicy::kBinpack), std::multiset<uint32_t>{0});
  EXPECT_EQ(MigGpuUnder(node, PlacementPolicy::kSpread), std::multiset<uint32_t>{1});
}

// Equal instance counts: spread takes the device whose instances hold fewer
// memory slices (a 1g takes 1 of 8, a 3g takes 4).
TEST(PlacementPolicyTest, MigSpreadBreaksEqualCountsOnMemorySlicesInUse) {
  const auto node = PolicyMigNode({{{"3g.40gb", 4, true}}, {{"1g.10gb", 0, true}}});
  EXPECT_EQ(MigGpuUnder(node, PlacementPolicy::kDefault), std::multiset<uint32_t>{0});
  EXPECT_EQ(MigGpuUnder(node, PlacementPolicy::kBinpack), std::multiset<uint32_t>{0});
  EXPECT_EQ(MigGpuUnder(node, PlacementPolicy::kSpread), std::multiset<uint32_t>{1});
}

// Spread switches an idle device to MIG only when no MIG device holds the
// instance: here GPU 0's layout is full for a 4g.
TEST(PlacementPolicyTest, MigSpreadSwitchesAnIdleDeviceOnlyWhenNoMigDeviceHoldsIt) {
  ClusterView view;
  view.nodes = {PolicyMigNode({{{"4g.40gb", 0, true}}, {}})};
  view.pending = {WithPolicies(JobBuilder(1, "default", 1, 1).Mig("4g.40gb"), PlacementPolicy::kDefault,
                               PlacementPolicy::kSpread)};
  const Plan plan = Schedule(view, Default());
  ASSERT_EQ(BindsOf(plan, 1), 1u);
  EXPECT_EQ(GpusOf(plan, 1), std::multiset<uint32_t>{1});
}

// The session hands the job's policy to the vendor rule: on a Kunlun P800
// node with one device split in quarters, a quarter packs onto it by default
// and under binpack, and under spread takes an unsplit device of the wing
// with three whole devices left (vendor_rules.h), keeping wing 0 whole.
TEST(PlacementPolicyTest, KunlunSliceFollowsTheJobsGpuPolicy) {
  for (const auto policy : {PlacementPolicy::kDefault, PlacementPolicy::kBinpack, PlacementPolicy::kSpread}) {
    ClusterView view;
    view.nodes = {MakeNode("xpu", 8, "public", "P800")};
    for (auto& gpu : view.nodes[0].gpus) {
      gpu.vendor = "kunlunxin";
      gpu.memory_mib = 98304;
    }
    AddShareTenant(view, "xpu", 4, 24576);
    view.pending = {WithPolicies(JobBuilder(1, "default", 1, 1).Share(10000), PlacementPolicy::kDefault, policy)};
    const Plan plan = Schedule(view, Default());
    ASSERT_EQ(BindsOf(plan, 1), 1u) << ToString(policy);
    EXPECT_EQ(plan.binds[0].grant.gpu_memory_mib, 24576u) << ToString(policy);
    const uint32_t expected = policy == PlacementPolicy::kSpread ? 5 : 4;
    EXPECT_EQ(GpusOf(plan, 1), std::multiset<uint32_t>{expected}) << ToString(policy);
  }
}

}  // namespace
}  // namespace gpool::scheduler
