// Scenario tests of device sharing: fractional GPUs (memory and compute),
// sharing QoS, MIG (static and dynamic), device UUID lists and the
// gpu_memory quota. Each test is a small cluster and the plan the rule
// demands.
#include <gtest/gtest.h>

#include "control/scheduler/scenario.h"

namespace gpool::scheduler {
namespace {

using namespace testing;  // NOLINT: the scenario builders
using topology::ClusterView;

SchedulerConfig DefaultConfig() { return SchedulerConfig{}; }

const Placement* BindOf(const Plan& plan, uint64_t job) {
  for (const auto& bind : plan.binds) {
    if (bind.job.value() == job) return &bind;
  }
  return nullptr;
}

// Adds a share tenant to GPU `index` of `node`, as the state machine reports it.
void Share(ClusterView& view, const std::string& node, uint32_t index, uint64_t memory, uint32_t compute,
           std::string qos = "best-effort") {
  for (auto& n : view.nodes) {
    if (n.name != node) continue;
    auto& gpu = n.gpus[index];
    ++gpu.tenants;
    gpu.memory_used_mib += memory;
    gpu.compute_used_pct += compute;
    if (compute < 100 && gpu.qos.empty()) gpu.qos = qos;
  }
}

TEST(ShareTest, TwoHalfMemorySharesFillOneGpuAndTheThirdWaits) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 1)};
  view.pending = {JobBuilder(1, "default", 1, 1).Share(40960), JobBuilder(2, "default", 1, 1).Share(40960),
                  JobBuilder(3, "default", 1, 1).Share(40960)};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 2u);
  for (const auto& bind : plan.binds) {
    EXPECT_EQ(bind.gpu_indices, std::vector<uint32_t>{0});
    EXPECT_TRUE(bind.grant.shared);
    EXPECT_EQ(bind.grant.gpu_memory_mib, 40960u);
    EXPECT_EQ(bind.grant.sharing_qos, "best-effort");
  }
  EXPECT_EQ(ReasonsOf(plan, 3), (std::vector<std::string>{"1 node: no GPU with room for the share"}));
}

TEST(ShareTest, PercentageResolvesToMibOfTheDevice) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 1)};  // 81920 MiB GPUs
  view.pending = {JobBuilder(1, "default", 1, 1).Share(0, 0, "", 25)};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].grant.gpu_memory_mib, 20480u);
  EXPECT_EQ(plan.binds[0].gpu_memory_mib, 20480u);
}

TEST(ShareTest, SharesPackOntoUsedGpusSoWholeGpusStayFree) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 2)};
  Share(view, "n1", 1, 20480, 0);
  view.pending = {JobBuilder(1, "default", 1, 1).Share(20480), JobBuilder(2, "default", 1, 1)};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 2u);
  EXPECT_EQ(BindOf(plan, 1)->gpu_indices, std::vector<uint32_t>{1});
  EXPECT_EQ(BindOf(plan, 2)->gpu_indices, std::vector<uint32_t>{0});
}

TEST(ShareTest, ComputeAddsUpToAtMostOneHundredPercent) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 2)};
  view.pending = {JobBuilder(1, "default", 1, 1).Share(1024, 60), JobBuilder(2, "default", 1, 1).Share(1024, 50)};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 2u);
  EXPECT_NE(BindOf(plan, 1)->gpu_indices, BindOf(plan, 2)->gpu_indices);
}

TEST(ShareTest, WholeGpuTaskNeverLandsOnASharedGpu) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 1)};
  Share(view, "n1", 0, 1024, 10);
  view.pending = {JobBuilder(1, "default", 1, 1)};
  Plan plan = Schedule(view, DefaultConfig());
  EXPECT_TRUE(plan.binds.empty());
  EXPECT_EQ(ReasonsOf(plan, 1), (std::vector<std::string>{"1 node: insufficient GPUs"}));
}

TEST(ShareTest, ShareNeverLandsOnAGpuHeldWhole) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 1)};
  view.nodes[0].gpus[0].allocated = true;
  view.pending = {JobBuilder(1, "default", 1, 1).Share(1024)};
  Plan plan = Schedule(view, DefaultConfig());
  EXPECT_TRUE(plan.binds.empty());
  EXPECT_EQ(ReasonsOf(plan, 1), (std::vector<std::string>{"1 node: no GPU free to share"}));
}

TEST(ShareTest, MultiGpuShareTakesDistinctDevicesOnOneNumaNode) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 4)};
  for (uint32_t g = 0; g < 4; ++g) view.nodes[0].gpus[g].numa = g < 2 ? 0 : 1;
  Share(view, "n1", 0, 70000, 0);  // NUMA 0 has one GPU with room
  view.pending = {JobBuilder(1, "default", 1, 2).Share(20480).Numa(topology::NumaPolicy::kSingleNumaNode)};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].gpu_indices, (std::vector<uint32_t>{2, 3}));
}

// --- Sharing QoS ----------------------------------------------------------------

TEST(QosTest, SharedGpuTakesOnlyItsFirstTenantsQos) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 1)};
  Share(view, "n1", 0, 1024, 30, "fixed-share");
  view.pending = {JobBuilder(1, "default", 1, 1).Share(1024, 30, "burst-share"),
                  JobBuilder(2, "default", 1, 1).Share(1024, 30, "fixed-share")};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].job.value(), 2u);
  EXPECT_EQ(ReasonsOf(plan, 1), (std::vector<std::string>{"1 node: GPUs shared under another QoS"}));
}

TEST(QosTest, FullComputeTaskIsExemptFromQos) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 1)};
  Share(view, "n1", 0, 1024, 0, "fixed-share");
  view.pending = {JobBuilder(1, "default", 1, 1).Share(1024, 100, "burst-share")};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 1u);
}

// --- MIG --------------------------------------------------------------------------

topology::NodeView MigNode(std::string name, uint32_t gpus, std::string mode) {
  auto node = MakeNode(std::move(name), gpus, "public", "A100-SXM4-80GB");
  for (auto& gpu : node.gpus) gpu.mig_mode = mode;
  return node;
}

TEST(MigTest, DynamicAutoChoosesTheSmallestProfileThatHoldsTheRequest) {
  ClusterView view;
  view.nodes = {MigNode("n1", 1, "dynamic")};
  view.pending = {JobBuilder(1, "default", 1, 1).Mig("auto", 9000), JobBuilder(2, "default", 1, 1).Mig("auto", 15000)};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 2u);
  EXPECT_EQ(BindOf(plan, 1)->grant.mig_profile, "1g.10gb");
  EXPECT_EQ(BindOf(plan, 2)->grant.mig_profile, "1g.20gb");
  EXPECT_NE(BindOf(plan, 1)->grant.mig_start, BindOf(plan, 2)->grant.mig_start);
}

TEST(MigTest, DynamicPacksOntoAGpuAlreadyInMigModeBeforeSwitchingAnIdleOne) {
  ClusterView view;
  view.nodes = {MigNode("n1", 2, "dynamic")};
  view.nodes[0].gpus[1].mig = {{"3g.40gb", 4, true}};
  view.nodes[0].gpus[1].tenants = 1;
  view.pending = {JobBuilder(1, "default", 1, 1).Mig("3g.40gb"), JobBuilder(2, "default", 1, 1)};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 2u);
  EXPECT_EQ(BindOf(plan, 1)->gpu_indices, std::vector<uint32_t>{1});
  EXPECT_EQ(BindOf(plan, 1)->grant.mig_start, 0u);
  EXPECT_EQ(BindOf(plan, 2)->gpu_indices, std::vector<uint32_t>{0});  // the idle GPU stays whole
}

TEST(MigTest, GpuInMigModeRunsOnlyMigInstances) {
  // A real GPU offered for dynamic MIG is in MIG mode: whole-GPU and share
  // tasks cannot use it even while it is empty.
  ClusterView view;
  view.nodes = {MigNode("n1", 1, "dynamic")};
  view.nodes[0].gpus[0].mig_enabled = true;
  view.pending = {JobBuilder(1, "default", 1, 1), JobBuilder(2, "default", 1, 1).Share(1024),
                  JobBuilder(3, "default", 1, 1).Mig("1g.10gb")};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].job.value(), 3u);
  EXPECT_FALSE(ReasonsOf(plan, 1).empty());
  EXPECT_EQ(ReasonsOf(plan, 2), (std::vector<std::string>{"1 node: no GPU free to share"}));
}

TEST(MigTest, DynamicLayoutFullMeansWait) {
  ClusterView view;
  view.nodes = {MigNode("n1", 1, "dynamic")};
  view.nodes[0].gpus[0].mig = {{"4g.40gb", 0, true}};
  view.nodes[0].gpus[0].tenants = 1;
  view.pending = {JobBuilder(1, "default", 1, 1).Mig("4g.40gb"), JobBuilder(2, "default", 1, 1).Mig("3g.40gb")};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].job.value(), 2u);
  EXPECT_EQ(plan.binds[0].grant.mig_start, 4u);
  EXPECT_EQ(ReasonsOf(plan, 1), (std::vector<std::string>{"1 node: no MIG instance of the profile fits"}));
}

TEST(MigTest, StaticHandsOutTheInstancesThatExistAndNeverTheWholeGpu) {
  ClusterView view;
  view.nodes = {MigNode("n1", 1, "static")};
  view.nodes[0].gpus[0].mig = {{"3g.40gb", 0, false}, {"2g.20gb", 4, false}, {"1g.10gb", 6, false}};
  view.pending = {JobBuilder(1, "default", 1, 1).Mig("auto", 12000), JobBuilder(2, "default", 1, 1)};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].grant.mig_profile, "2g.20gb");
  EXPECT_EQ(plan.binds[0].grant.mig_start, 4u);
  EXPECT_FALSE(ReasonsOf(plan, 2).empty());
}

TEST(MigTest, ModelWithoutMigTableSaysSo) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 1, "public", "L40S")};
  view.nodes[0].gpus[0].mig_mode = "dynamic";
  view.pending = {JobBuilder(1, "default", 1, 1).Mig("1g.10gb")};
  Plan plan = Schedule(view, DefaultConfig());
  EXPECT_EQ(ReasonsOf(plan, 1), (std::vector<std::string>{"1 node: no MIG-capable GPU"}));
}

TEST(MigTest, SharesAndMigNeverMixOnOneGpu) {
  ClusterView view;
  view.nodes = {MigNode("n1", 1, "dynamic")};
  Share(view, "n1", 0, 1024, 0);
  view.pending = {JobBuilder(1, "default", 1, 1).Mig("1g.10gb")};
  Plan plan = Schedule(view, DefaultConfig());
  EXPECT_TRUE(plan.binds.empty());
}

// --- UUID lists ----------------------------------------------------------------------

TEST(UuidTest, AllowAndDenyListsNarrowTheDevices) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 4)};
  for (uint32_t g = 0; g < 4; ++g) view.nodes[0].gpus[g].uuid = "GPU-" + std::to_string(g);
  topology::PendingJob allow = JobBuilder(1, "default", 1, 2);
  allow.gpu_uuid_allow = {"GPU-1", "GPU-3"};
  topology::PendingJob deny = JobBuilder(2, "default", 1, 1);
  deny.gpu_uuid_deny = {"GPU-0"};
  view.pending = {allow, deny};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 2u);
  EXPECT_EQ(BindOf(plan, 1)->gpu_indices, (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(BindOf(plan, 2)->gpu_indices, std::vector<uint32_t>{2});
}

TEST(UuidTest, DeniedDevicesAreNamedAsTheReason) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 1)};
  view.nodes[0].gpus[0].uuid = "GPU-0";
  topology::PendingJob job = JobBuilder(1, "default", 1, 1);
  job.gpu_uuid_deny = {"GPU-0"};
  view.pending = {job};
  Plan plan = Schedule(view, DefaultConfig());
  EXPECT_EQ(ReasonsOf(plan, 1), (std::vector<std::string>{"1 node: GPUs excluded by the job's UUID lists"}));
}

// --- Composite quota ---------------------------------------------------------------------

TEST(GpuMemoryQuotaTest, SharesCountCountTimesSizeAgainstTheQueue) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 4)};
  view.queues = {MakeQueue("root", ""), MakeQueue("team", "root", {{"gpu_memory", 3 * 20480}})};
  // 2 GPUs x 20 GiB = 40 GiB fits; a second such job would make 80 GiB.
  view.pending = {JobBuilder(1, "team", 1, 2).Share(20480), JobBuilder(2, "team", 1, 2).Share(20480)};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].gpu_memory_mib, 2u * 20480);
  EXPECT_TRUE(AnyReasonContains(plan, 2, "gpu_memory"));
}

TEST(GpuMemoryQuotaTest, WholeGpusCountTheirDevicesMemory) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 4)};
  view.queues = {MakeQueue("root", ""), MakeQueue("team", "root", {{"gpu_memory", 2 * 81920}})};
  view.pending = {JobBuilder(1, "team", 1, 2), JobBuilder(2, "team", 1, 1)};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].gpu_memory_mib, 2u * 81920);
  EXPECT_TRUE(AnyReasonContains(plan, 2, "gpu_memory"));
}

// --- Vendor rules in the scheduler ------------------------------------------------------

topology::NodeView VendorNode(std::string name, uint32_t devices, std::string vendor, std::string model,
                              uint64_t memory_mib = 65536, uint32_t cores = 0) {
  auto node = MakeNode(std::move(name), devices, "public", model);
  for (auto& gpu : node.gpus) {
    gpu.vendor = vendor;
    gpu.memory_mib = memory_mib;
    gpu.cores = cores;
  }
  return node;
}

TEST(VendorRuleTest, AscendTwoChipTaskStaysInsideOneHccsRing) {
  ClusterView view;
  view.nodes = {VendorNode("a1", 8, "huawei", "Ascend910")};
  for (uint32_t g : {0u, 1u, 2u}) view.nodes[0].gpus[g].allocated = true;  // ring 0 has one chip left
  view.pending = {JobBuilder(1, "default", 1, 2)};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 1u);
  for (uint32_t index : plan.binds[0].gpu_indices) EXPECT_GE(index, 4u);
}

TEST(VendorRuleTest, AscendCountTheRuleForbidsWaitsWithTheRuleAsReason) {
  ClusterView view;
  view.nodes = {VendorNode("a1", 8, "huawei", "Ascend910")};
  view.pending = {JobBuilder(1, "default", 1, 3)};
  Plan plan = Schedule(view, DefaultConfig());
  EXPECT_TRUE(plan.binds.empty());
  EXPECT_EQ(ReasonsOf(plan, 1),
            (std::vector<std::string>{"1 node: no device set the vendor's placement rule allows"}));
}

TEST(VendorRuleTest, NeuronCoreRequestGetsContiguousCoresOnOneDevice) {
  ClusterView view;
  view.nodes = {VendorNode("trn", 4, "aws", "trainium", 32768, 2)};
  topology::PendingJob job = JobBuilder(1, "default", 1, 0);
  job.tasks[0].resources.cores = 2;
  view.pending = {job};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 1u);
  ASSERT_EQ(plan.binds[0].grant.cores.size(), 2u);
  EXPECT_EQ(plan.binds[0].grant.cores[1], plan.binds[0].grant.cores[0] + 1);
  EXPECT_EQ(plan.binds[0].gpu_indices.size(), 1u);
}

TEST(VendorRuleTest, KunlunShareRoundsUpToAQuarterDevice) {
  ClusterView view;
  view.nodes = {VendorNode("xpu", 8, "kunlunxin", "P800", 98304)};
  view.pending = {JobBuilder(1, "default", 1, 1).Share(10000)};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_TRUE(plan.binds[0].grant.shared);
  EXPECT_EQ(plan.binds[0].grant.gpu_memory_mib, 24576u);
}

TEST(VendorRuleTest, CoreRequestsWaitOnNodesWithoutAddressableCores) {
  ClusterView view;
  view.nodes = {MakeNode("n1", 4)};
  topology::PendingJob job = JobBuilder(1, "default", 1, 0);
  job.tasks[0].resources.cores = 2;
  view.pending = {job};
  Plan plan = Schedule(view, DefaultConfig());
  EXPECT_TRUE(plan.binds.empty());
}

// --- NUMA fit of CPU and memory -----------------------------------------------------------

topology::NodeView TwoNumaNode(std::string name, uint32_t gpus) {
  auto node = MakeNode(std::move(name), gpus, "public", "A100", 64'000, 512 * 1024);
  for (uint32_t g = 0; g < gpus; ++g) node.gpus[g].numa = g < gpus / 2 ? 0 : 1;
  node.numa = {{0, 32'000, 32'000, 256 * 1024, 256 * 1024}, {1, 32'000, 32'000, 256 * 1024, 256 * 1024}};
  return node;
}

TEST(NumaFitTest, CpuTaskFitsOneNumaNodeOrWaitsUnderSingleNumaNode) {
  ClusterView view;
  view.nodes = {TwoNumaNode("n1", 0)};
  view.nodes[0].numa[1].cpu_milli_free = 20'000;
  view.pending = {JobBuilder(1, "default", 1, 0).Cpu(40'000, 1024).Numa(topology::NumaPolicy::kSingleNumaNode),
                  JobBuilder(2, "default", 1, 0).Cpu(16'000, 1024).Numa(topology::NumaPolicy::kSingleNumaNode)};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].job.value(), 2u);
  EXPECT_EQ(plan.binds[0].numa_node, 1) << "the fullest NUMA node that holds it";
  EXPECT_EQ(ReasonsOf(plan, 1), (std::vector<std::string>{"1 node: NUMA not fit"}));
}

TEST(NumaFitTest, GpusComeFromTheNumaNodeWithCpuRoom) {
  ClusterView view;
  view.nodes = {TwoNumaNode("n1", 4)};
  view.nodes[0].numa[0].cpu_milli_free = 1'000;  // NUMA 0's CPUs are taken
  view.pending = {JobBuilder(1, "default", 1, 2).Cpu(8'000, 1024).Numa(topology::NumaPolicy::kSingleNumaNode)};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].gpu_indices, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(plan.binds[0].numa_node, 1);
}

TEST(NumaFitTest, NoPolicyRecordsNoNumaNode) {
  ClusterView view;
  view.nodes = {TwoNumaNode("n1", 4)};
  view.pending = {JobBuilder(1, "default", 1, 2)};
  Plan plan = Schedule(view, DefaultConfig());
  ASSERT_EQ(plan.binds.size(), 1u);
  EXPECT_EQ(plan.binds[0].numa_node, -1);
}

}  // namespace
}  // namespace gpool::scheduler
