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

}  // namespace
}  // namespace gpool::worker
