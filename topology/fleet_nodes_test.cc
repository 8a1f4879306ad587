#include "topology/fleet_nodes.h"

#include <set>

#include <gtest/gtest.h>

#include "topology/test_nodes.h"

namespace gpool::topology {
namespace {

using testing::MakeGpuNode;

TEST(FleetNodesTest, NumbersArePaddedToSortInNodeOrder) {
  EXPECT_EQ(FleetNodeNumber(0, 20), "0001");
  EXPECT_EQ(FleetNodeNumber(999, 1000), "1000");
  EXPECT_EQ(FleetNodeNumber(0, 10000), "00001");
  EXPECT_EQ(FleetNodeNumber(9999, 10000), "10000");
}

TEST(FleetNodesTest, EveryNodeAndDeviceIsDistinct) {
  NodeSpec spec = MakeGpuNode(2);
  spec.name = "gpu-a01";
  spec.hostname = "gpu-a01.dc1";
  spec.labels = {{"pool", "public"}};
  spec.gpus[1].mig_mode = "static";
  spec.gpus[1].mig_instances = {{"1g.10gb", 0, "MIG-x"}};
  auto nodes = MakeFleetNodes(spec, "", 3);
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 3u);
  std::set<std::string> names, uuids;
  for (const NodeSpec& node : *nodes) {
    names.insert(node.name);
    EXPECT_EQ(node.hostname, node.name);
    EXPECT_EQ(node.labels, spec.labels);
    EXPECT_EQ(node.cpu_milli, spec.cpu_milli);
    ASSERT_EQ(node.gpus.size(), 2u);
    for (const GpuInfo& gpu : node.gpus) {
      uuids.insert(gpu.uuid);
      for (const auto& instance : gpu.mig_instances) uuids.insert(instance.uuid);
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"gpu-a01-0001", "gpu-a01-0002", "gpu-a01-0003"}));
  EXPECT_EQ(uuids.size(), 3u * 3u) << "two GPUs and one MIG instance per node, none shared";
  EXPECT_EQ((*nodes)[1].gpus[0].uuid, "GPU-0-0002");
  EXPECT_EQ((*nodes)[1].gpus[1].mig_instances[0].uuid, "MIG-x-0002");
}

TEST(FleetNodesTest, BaseNameOverridesTheSpecs) {
  auto nodes = MakeFleetNodes(MakeGpuNode(0), "sim", 1);
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ((*nodes)[0].name, "sim-0001");
}

TEST(FleetNodesTest, NameTooLongForTheSuffixIsInvalidArgument) {
  auto nodes = MakeFleetNodes(MakeGpuNode(0), std::string(252, 'n'), 2);
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(nodes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nodes.status().message().find("simulated node"), std::string::npos) << nodes.status().message();
}

}  // namespace
}  // namespace gpool::topology
