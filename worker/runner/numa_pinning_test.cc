#include "worker/runner/numa_pinning.h"

#include <gtest/gtest.h>

#include "protocol/messages_worker.h"
#include "worker/runner/numa_apply.h"

namespace gpool::worker {
namespace {

// Two NUMA nodes of 4 CPUs each; GPUs 0-1 on node 0, 2-3 on node 1.
NodeSpec TwoSocketNode() {
  NodeSpec node;
  node.name = "n1";
  node.cpu_milli = 8000;
  node.memory_mib = 8192;
  node.numa = {{0, 4000, 4096, "0-3"}, {1, 4000, 4096, "4-7"}};
  for (uint32_t i = 0; i < 4; ++i) {
    GpuInfo gpu;
    gpu.index = i;
    gpu.uuid = "GPU-" + std::to_string(i);
    gpu.numa = i < 2 ? 0 : 1;
    node.gpus.push_back(gpu);
  }
  return node;
}

BindTask Bind(std::vector<uint32_t> gpus, const std::string& policy) {
  BindTask bind;
  bind.command = {"true"};
  bind.gpu_indices = std::move(gpus);
  bind.numa_policy = policy;
  return bind;
}

TEST(NumaPinningTest, PinsToTheGpusNumaNodes) {
  const NodeSpec node = TwoSocketNode();
  NumaPinning one = PlanNumaPinning(Bind({1}, "single-numa-node"), node);
  EXPECT_EQ(one.cpus, (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(one.nodes, std::vector<int32_t>{0});
  EXPECT_TRUE(one.strict);

  NumaPinning both = PlanNumaPinning(Bind({3, 0}, "best-effort"), node);
  EXPECT_EQ(both.cpus, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(both.nodes, (std::vector<int32_t>{0, 1}));
  EXPECT_FALSE(both.strict);
}

TEST(NumaPinningTest, NothingToPin) {
  const NodeSpec node = TwoSocketNode();
  EXPECT_TRUE(PlanNumaPinning(Bind({0}, "none"), node).empty());
  EXPECT_TRUE(PlanNumaPinning(Bind({0}, ""), node).empty());
  EXPECT_TRUE(PlanNumaPinning(Bind({}, "best-effort"), node).empty()) << "no devices, no NUMA node";

  NodeSpec unknown = node;
  for (auto& gpu : unknown.gpus) gpu.numa = -1;
  EXPECT_TRUE(PlanNumaPinning(Bind({0}, "best-effort"), unknown).empty());

  NodeSpec no_cpulist = node;
  no_cpulist.numa[0].cpus.clear();
  EXPECT_TRUE(PlanNumaPinning(Bind({0}, "single-numa-node"), no_cpulist).empty());
  NumaPinning partial = PlanNumaPinning(Bind({0, 2}, "best-effort"), no_cpulist);
  EXPECT_EQ(partial.nodes, std::vector<int32_t>{1}) << "nodes without a cpulist are left out";
}

TEST(NumaPinningTest, CoreTasksFollowTheirDevices) {
  NodeSpec node = TwoSocketNode();
  for (auto& gpu : node.gpus) gpu.cores = 2;  // cores 0-3 on node 0, 4-7 on node 1
  BindTask bind = Bind({}, "best-effort");
  bind.cores = {5};
  NumaPinning pinning = PlanNumaPinning(bind, node);
  EXPECT_EQ(pinning.nodes, std::vector<int32_t>{1});
  EXPECT_EQ(pinning.cpus, (std::vector<uint32_t>{4, 5, 6, 7}));
}

TEST(PreparedPinningTest, CpusAbsentHereAreNotPinned) {
  NumaPinning simulated;
  simulated.cpus = {60000, 60001};  // no machine this runs on has these
  simulated.nodes = {0};
  std::vector<std::string> notes;
  PreparedPinning p = PreparedPinning::Prepare(simulated, &notes);
  EXPECT_FALSE(p.pins_cpus());
  EXPECT_FALSE(p.pins_memory());
  EXPECT_EQ(p.ApplyCpus(), 0);
  EXPECT_EQ(p.ApplyMemory(), 0);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("not pinned"), std::string::npos) << notes[0];
}

TEST(PreparedPinningTest, MemoryPolicyFollowsTheNumaPolicy) {
  NumaPinning pinning;
  pinning.cpus = {0};
  pinning.nodes = {0};
  std::vector<std::string> notes;
  PreparedPinning preferred = PreparedPinning::Prepare(pinning, &notes);
  if (!preferred.pins_cpus()) GTEST_SKIP() << "CPU 0 is not usable by this test process";
  EXPECT_EQ(preferred.cpu_list(), "0");
  EXPECT_STREQ(preferred.mode_name(), "preferred");
  EXPECT_EQ(preferred.node_list(), "0");
  pinning.strict = true;
  PreparedPinning bind = PreparedPinning::Prepare(pinning, &notes);
  EXPECT_STREQ(bind.mode_name(), "bind");
  EXPECT_TRUE(notes.empty()) << notes.front();
}

}  // namespace
}  // namespace gpool::worker
