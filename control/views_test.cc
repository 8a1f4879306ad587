#include "control/views.h"

#include <gtest/gtest.h>

#include "control/state/test_specs.h"
#include "protocol/messages_nodes.h"

namespace gpool::control {
namespace {

TEST(ViewsTest, NodeSummaryListsDevicesLinkGroupsAndHoldersOnlyWhenAsked) {
  state::NodeRecord node;
  node.spec = state::testing::MakeNode("n1", 4);
  node.spec.gpus[0].nvlink_peers = {1};  // one-sided: still a link
  node.spec.gpus[2].nvlink_peers = {3};
  node.spec.gpus[3].nvlink_peers = {2};
  node.spec.gpus[0].numa = node.spec.gpus[1].numa = 0;
  node.spec.numa = {NumaInfo{0, 32'000, 128 * 1024}};
  node.gpu_owner[2] = TaskId{JobId(7), 1, 2};

  EXPECT_TRUE(ToNodeSummary(node).devices.empty());
  NodeSummary summary = ToNodeSummary(node, /*devices=*/true);
  ASSERT_EQ(summary.devices.size(), 4u);
  EXPECT_EQ(summary.devices[0].link_group, summary.devices[1].link_group);
  EXPECT_EQ(summary.devices[2].link_group, summary.devices[3].link_group);
  EXPECT_NE(summary.devices[0].link_group, summary.devices[2].link_group);
  EXPECT_EQ(summary.devices[2].task, "7.1#2");
  EXPECT_EQ(summary.devices[0].task, "");
  ASSERT_EQ(summary.numa.size(), 1u);
  EXPECT_EQ(summary.numa[0].gpus, (std::vector<uint32_t>{0, 1}));
}

}  // namespace
}  // namespace gpool::control
