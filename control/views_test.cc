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

// Issue 50: GetJob's scale status, one per group with rules; the cool-down
// counts from the job's last change, as the scale driver counts it.
TEST(ViewsTest, ScaleStatusShowsTargetLastChangeAndTheCoolDownLeft) {
  state::JobRecord job;
  job.state = JobState::kRunning;
  TaskGroupSpec plain;
  plain.name = "ps";
  plain.replicas = 1;
  TaskGroupSpec elastic;
  elastic.name = "workers";
  elastic.replicas = 4;
  elastic.min_replicas = 1;
  elastic.scale.rules = {ScaleRule{"queue-depth", 2, 1}};
  elastic.scale.cooldown_ms = 60'000;
  job.spec.tasks = {plain, elastic};
  constexpr int64_t kScaledAtMs = 1'700'000'000'000;

  std::vector<GroupScaleStatus> before = ToScaleStatus(job, kScaledAtMs);
  ASSERT_EQ(before.size(), 1u) << "only the group with rules";
  EXPECT_EQ(before[0].group, "workers");
  EXPECT_EQ(before[0].target, 1u) << "its minimum until a rule moves it";
  EXPECT_EQ(before[0].cooldown_left_ms, 0u);
  EXPECT_EQ(before[0].last.time_ms, 0);

  const ScaleChange change{kScaledAtMs, 2, 3, "queue-depth", "queue default: 5 pending"};
  job.UpdateExtras([&](state::JobRecord::Extras& e) {
    e.scale_target = {0, 3};
    e.scaled_ms = kScaledAtMs;
    e.scale_last = {ScaleChange{}, change};
  });
  const GetJobReply reply = ToJobDetail(job, state::ClusterState{}, kScaledAtMs + 15'000);
  ASSERT_EQ(reply.scale.size(), 1u);
  const GroupScaleStatus& status = reply.scale[0];
  EXPECT_EQ(status.min, 1u);
  EXPECT_EQ(status.max, 4u);
  EXPECT_EQ(status.target, 3u);
  EXPECT_EQ(status.cooldown_ms, 60'000u);
  EXPECT_EQ(status.cooldown_left_ms, 45'000u);
  EXPECT_EQ(status.last, change);
  EXPECT_EQ(ToScaleStatus(job, kScaledAtMs + 60'000)[0].cooldown_left_ms, 0u) << "the cool-down has passed";
  job.state = JobState::kCancelled;
  EXPECT_EQ(ToScaleStatus(job, kScaledAtMs + 15'000)[0].cooldown_left_ms, 0u) << "an ended job waits for nothing";
}

}  // namespace
}  // namespace gpool::control
