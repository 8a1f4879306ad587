#include "worker/discovery/discover.h"

#include <gtest/gtest.h>

#include "worker/test_util.h"

namespace gpool::worker {
namespace {

TEST(DiscoverTest, SpecFileWinsAndNodeNameOverrides) {
  testing::TempDir dir;
  DiscoveryOptions options;
  options.spec_path = dir.Write("n.yaml", "name: a\ncpus: 2\nmemory: 4Gi\ngpus: {count: 2}\n");
  options.node_name = "override";
  options.nvml.library = "libnvidia-ml-does-not-exist.so.1";
  auto node = DiscoverNode(options);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->name, "override");
  EXPECT_EQ(node->gpus.size(), 2u);
  EXPECT_EQ(node->gpus[1].uuid, "GPU-override-1");
}

TEST(DiscoverTest, BadSpecIsAnError) {
  testing::TempDir dir;
  DiscoveryOptions options;
  options.spec_path = dir.Write("n.yaml", "name: a\ncpus: two\nmemory: 4Gi\n");
  auto node = DiscoverNode(options);
  EXPECT_EQ(node.status().code(), StatusCode::kInvalidArgument);
}

TEST(DiscoverTest, WithoutNvmlTheNodeIsCpuOnly) {
  testing::CapturedLog log;
  DiscoveryOptions options;
  options.node_name = "cpu-node";
  options.nvml.library = "libnvidia-ml-does-not-exist.so.1";
  options.logger = log.logger();
  auto node = DiscoverNode(options);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->name, "cpu-node");
  EXPECT_TRUE(node->gpus.empty());
  EXPECT_GT(node->cpu_milli, 0u);
  EXPECT_TRUE(log.Contains("no NVIDIA GPUs")) << log.text();
}

TEST(DiscoverTest, NvmlGpusJoinTheHostProbe) {
  DiscoveryOptions options;
  options.node_name = "gpu-node";
  options.nvml.library = GPOOL_FAKE_NVML_PATH;
  auto node = DiscoverNode(options);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->gpus.size(), 4u);
  EXPECT_GT(node->memory_mib, 0u);
}

TEST(DiscoverTest, MigDynamicOffersOnlyEmptyMigGpus) {
  ::setenv("FAKE_NVML_MIG_DYNAMIC", "1", 1);  // GPU 1: MIG on, no instances
  DiscoveryOptions options;
  options.node_name = "gpu-node";
  options.nvml.library = GPOOL_FAKE_NVML_PATH;
  auto plain = DiscoverNode(options);
  options.mig_dynamic = true;
  auto dynamic = DiscoverNode(options);
  ::unsetenv("FAKE_NVML_MIG_DYNAMIC");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  ASSERT_TRUE(dynamic.ok()) << dynamic.status().ToString();
  EXPECT_EQ(plain->gpus[1].mig_mode, "static");
  EXPECT_EQ(dynamic->gpus[1].mig_mode, "dynamic");
  EXPECT_TRUE(dynamic->gpus[1].mig_enabled);
  EXPECT_EQ(dynamic->gpus[0].mig_mode, plain->gpus[0].mig_mode) << "GPUs without MIG or with instances stay";
}

}  // namespace
}  // namespace gpool::worker
