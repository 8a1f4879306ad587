// A queue update from a client that predates the queue's newer fields (issue
// 50): the keys it leaves out keep the queue's values, through the gateway's
// decoding, the log's encoding and apply; an explicit value, the default
// included, still replaces. (protocol/model/queue_update.h, UpdateQueue.keep.)
#include <gtest/gtest.h>

#include <msgpack.hpp>

#include "control/state/cluster_state.h"
#include "control/state/commands.h"
#include "protocol/model/queue_update.h"
#include "protocol/validate.h"
#include "protocol/wire.h"

namespace gpool::state {
namespace {

// The UpdateQueue body an older client writes: its spec knows name, parent,
// the three quotas and pools, nothing of the preemption policy.
std::string OldClientQueueUpdate(const std::string& op, const std::string& name, uint64_t gpus,
                                 bool with_guarantee = true) {
  msgpack::sbuffer buffer;
  wire::Packer packer(buffer);
  packer.BeginMap(2);
  packer.Field("op", op);
  packer.Key("spec");
  packer.BeginMap(with_guarantee ? 6 : 5);
  packer.Field("name", name);
  packer.Field("parent", "root");
  packer.Field("capability", Quota{{"gpu", gpus}});
  packer.Field("deserved", Quota{{"gpu", gpus / 2}});
  if (with_guarantee) packer.Field("guarantee", Quota{});
  packer.Field("pools", std::vector<std::string>{});
  return std::string(buffer.data(), buffer.size());
}

class QueueUpdateStateTest : public ::testing::Test {
 protected:
  // As the gateway and the log take a client's UpdateQueue: decoded,
  // validated, encoded as the log entry, decoded again by each replica,
  // applied.
  ApplyResult ApplyFromWire(const std::string& body) {
    auto update = wire::UnpackFromString<UpdateQueue>(body);
    if (!update.ok()) return ApplyResult{update.status()};
    if (Status valid = ValidateUpdateQueue(*update); !valid.ok()) return ApplyResult{valid};
    auto logged = DecodeCommand(EncodeCommand(Command{static_cast<int64_t>(1000 * (index_ + 1)),
                                                      UpdateQueueCmd{std::move(update).value()}}));
    if (!logged.ok()) return ApplyResult{logged.status()};
    return state_.Apply(++index_, std::move(logged).value());
  }
  ApplyResult ApplyUpdate(UpdateQueue update) { return ApplyFromWire(wire::PackToString(update)); }

  // "team" with a preemption policy other than the defaults, and high granted.
  void CreateTeamWithPolicy() {
    QueueSpec team;
    team.name = "team";
    team.capability = {{"gpu", 8}};
    team.deserved = {{"gpu", 4}};
    team.preempting_classes = {"system"};
    team.low_reclaimable = false;
    ASSERT_TRUE(ApplyUpdate(UpdateQueue{QueueOp::kCreate, team}).status.ok());
    UpdateQueue grant{QueueOp::kGrantClass, QueueSpec{"team"}, "high"};
    ASSERT_TRUE(ApplyUpdate(grant).status.ok());
  }

  const QueueRecord& Team() const { return *state_.FindQueue("team"); }

  ClusterState state_;
  uint64_t index_ = 0;
};

TEST_F(QueueUpdateStateTest, AnOldClientsUpdateDecodesWithTheFieldsItLeftOutToKeep) {
  auto update = wire::UnpackFromString<UpdateQueue>(OldClientQueueUpdate("update", "team", 16));
  ASSERT_TRUE(update.ok()) << update.status().ToString();
  EXPECT_EQ(update->keep, (std::vector<std::string>{"preempting_classes", "low_reclaimable"}));
  EXPECT_TRUE(ValidateUpdateQueue(*update).ok());
  // A create takes the defaults for what it leaves out: nothing to keep.
  auto create = wire::UnpackFromString<UpdateQueue>(OldClientQueueUpdate("create", "team", 16));
  ASSERT_TRUE(create.ok()) << create.status().ToString();
  EXPECT_TRUE(create->keep.empty());
  // A current client writes every field: nothing is kept.
  UpdateQueue full{QueueOp::kUpdate, QueueSpec{"team"}};
  auto decoded = wire::UnpackFromString<UpdateQueue>(wire::PackToString(full));
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->keep.empty());
}

TEST_F(QueueUpdateStateTest, AnOldClientsUpdateLeavesThePolicyFieldsAsTheyAre) {
  ASSERT_NO_FATAL_FAILURE(CreateTeamWithPolicy());
  ASSERT_TRUE(ApplyFromWire(OldClientQueueUpdate("update", "team", 16)).status.ok());
  EXPECT_EQ(Team().spec.capability, (Quota{{"gpu", 16}})) << "the quotas it sent are applied";
  EXPECT_EQ(Team().spec.deserved, (Quota{{"gpu", 8}}));
  EXPECT_EQ(Team().spec.preempting_classes, (std::vector<std::string>{"system"})) << "not reset to high,system";
  EXPECT_FALSE(Team().spec.low_reclaimable) << "not reset to true";
  EXPECT_EQ(Team().granted_classes, (std::vector<std::string>{"high"}));
  // Any spec field left out is kept, not only the policy's.
  ASSERT_TRUE(ApplyFromWire(OldClientQueueUpdate("update", "team", 12, /*with_guarantee=*/false)).status.ok());
  EXPECT_EQ(Team().spec.capability, (Quota{{"gpu", 12}}));
  EXPECT_TRUE(Team().spec.guarantee.empty());
  EXPECT_EQ(Team().spec.preempting_classes, (std::vector<std::string>{"system"}));
}

TEST_F(QueueUpdateStateTest, AnExplicitValueReplacesEvenTheDefault) {
  ASSERT_NO_FATAL_FAILURE(CreateTeamWithPolicy());
  QueueSpec spec = Team().spec;
  spec.preempting_classes = {"high", "system"};  // the defaults, written out
  spec.low_reclaimable = true;
  ASSERT_TRUE(ApplyUpdate(UpdateQueue{QueueOp::kUpdate, spec}).status.ok());
  EXPECT_EQ(Team().spec.preempting_classes, (std::vector<std::string>{"high", "system"}));
  EXPECT_TRUE(Team().spec.low_reclaimable);
  spec.preempting_classes = {};  // none may preempt: empty, but present
  ASSERT_TRUE(ApplyUpdate(UpdateQueue{QueueOp::kUpdate, spec}).status.ok());
  EXPECT_TRUE(Team().spec.preempting_classes.empty());
  // A field named in keep explicitly keeps its value even though the spec has one.
  spec.low_reclaimable = false;
  UpdateQueue keeping{QueueOp::kUpdate, spec};
  keeping.keep = {"low_reclaimable"};
  ASSERT_TRUE(ApplyUpdate(keeping).status.ok());
  EXPECT_TRUE(Team().spec.low_reclaimable);
}

TEST_F(QueueUpdateStateTest, AKeepThatNamesNoFieldOrCreatesIsRefusedAndChangesNothing) {
  ASSERT_NO_FATAL_FAILURE(CreateTeamWithPolicy());
  const QueueSpec before = Team().spec;
  QueueSpec spec = before;
  spec.capability = {{"gpu", 2}};
  spec.deserved = {{"gpu", 1}};
  UpdateQueue unknown{QueueOp::kUpdate, spec};
  unknown.keep = {"colour"};
  const ApplyResult refused = ApplyUpdate(unknown);
  EXPECT_EQ(refused.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status.message().find("keep: 'colour' is not a field of a queue spec"), std::string::npos)
      << refused.status.ToString();
  UpdateQueue create{QueueOp::kCreate, QueueSpec{"other"}};
  create.keep = {"pools"};
  EXPECT_EQ(ApplyUpdate(create).status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Team().spec, before);
  EXPECT_EQ(state_.FindQueue("other"), nullptr);
}

}  // namespace
}  // namespace gpool::state
