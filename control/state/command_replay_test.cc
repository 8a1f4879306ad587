// Log entries written before op, kind, state and role were enums (issue 47):
// their bytes, built here by hand the way the older coordinator wrote them
// (the fields as plain strings), decode into the enums and apply as they
// did; today's encoder writes the very same bytes; and an entry naming a
// value this build does not know is refused at decode, typed.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "control/state/cluster_state_fixture.h"
#include "control/state/test_specs.h"
#include "protocol/messages_worker.h"
#include "protocol/model/health_fence.h"
#include "protocol/model/node_update.h"
#include "protocol/model/probe.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/task_report.h"
#include "protocol/model/users.h"

namespace gpool::state {
namespace {

using testing::MakeNode;

// {"cmd": NAME, "t": TIME, "body": BODY}: a log entry as EncodeCommand has
// always framed it, with the body written by `body`.
std::string OldEntry(std::string_view name, int64_t time_ms, const std::function<void(wire::Packer&)>& body) {
  msgpack::sbuffer buffer;
  wire::Packer p(buffer);
  p.BeginMap(3);
  p.Field("cmd", name);
  p.Field("t", time_ms);
  p.Key("body");
  body(p);
  return std::string(buffer.data(), buffer.size());
}

class CommandReplayTest : public ClusterStateTest {
 protected:
  // Decodes an old entry and applies it at the next index.
  ApplyResult Replay(const std::string& bytes) {
    auto command = DecodeCommand(bytes);
    EXPECT_TRUE(command.ok()) << command.status().ToString();
    if (!command.ok()) return {command.status()};
    return state_.Apply(++index_, *command);
  }
};

std::string OldCordon(std::string_view op) {
  return OldEntry("UpdateNode", 2000, [op](wire::Packer& p) {
    p.BeginMap(1);
    p.Key("update");
    p.BeginMap(2);
    p.Field("node", "n1");
    p.Field("op", op);
  });
}

TEST_F(CommandReplayTest, AnOldNodeUpdateDecodesAndApplies) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 8), {}}).status.ok());
  auto decoded = DecodeCommand(OldCordon("cordon"));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(std::get<UpdateNodeCmd>(decoded->body).update.op, NodeUpdateOp::kCordon);
  ASSERT_TRUE(Replay(OldCordon("cordon")).status.ok());
  EXPECT_TRUE(state_.FindNode("n1")->cordoned);
  ASSERT_TRUE(Replay(OldCordon("uncordon")).status.ok());
  EXPECT_FALSE(state_.FindNode("n1")->cordoned);
}

TEST_F(CommandReplayTest, TodaysEncoderWritesTheOldBytes) {
  UpdateNode update;
  update.node = "n1";
  update.op = NodeUpdateOp::kCordon;
  // Every field UpdateNode writes, in its order, as the older build wrote
  // them, and grace_ms last (issue 48: a key rotation's grace).
  const std::string old = OldEntry("UpdateNode", 2000, [](wire::Packer& p) {
    p.BeginMap(1);
    p.Key("update");
    p.BeginMap(10);
    p.Field("node", "n1");
    p.Field("op", "cordon");
    p.Field("key", "");
    p.Field("labels", std::map<std::string, std::string>{});
    p.Field("remove_labels", std::vector<std::string>{});
    p.Field("pool", "");
    p.Field("queue", "");
    p.Field("taints", std::map<std::string, std::string>{});
    p.Field("remove_taints", std::vector<std::string>{});
    p.Field("grace_ms", uint64_t{0});
  });
  EXPECT_EQ(EncodeCommand(Command{2000, UpdateNodeCmd{update}}), old);
}

// A key rotation logged before issue 48 has no grace_ms: it decodes with
// none, and replays as it applied then (the old key refused at once).
TEST_F(CommandReplayTest, AnOldWorkerKeyRotationReplaysWithoutAGrace) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 8), {}, {}, std::string(40, 'o')}).status.ok());
  const std::string rotation = OldEntry("UpdateNode", 2000, [](wire::Packer& p) {
    p.BeginMap(1);
    p.Key("update");
    p.BeginMap(3);
    p.Field("node", "n1");
    p.Field("op", "worker-key");
    p.Field("key", std::string(40, 'n'));
  });
  auto decoded = DecodeCommand(rotation);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(std::get<UpdateNodeCmd>(decoded->body).update.grace_ms, 0u);
  ASSERT_TRUE(Replay(rotation).status.ok());
  EXPECT_EQ(state_.FindNode("n1")->worker_key, std::string(40, 'n'));
  EXPECT_TRUE(state_.FindNode("n1")->retired_key.empty());
  EXPECT_FALSE(state_.KeyAdmitted("n1", std::string(40, 'o'), 2000));
}

TEST_F(CommandReplayTest, OldUserQueueAndRoleEntriesApply) {
  const std::string queue = OldEntry("UpdateQueue", 2000, [](wire::Packer& p) {
    p.BeginMap(1);
    p.Key("update");
    p.BeginMap(2);
    p.Field("op", "create");
    p.Key("spec");
    p.BeginMap(2);
    p.Field("name", "ml");
    p.Field("parent", "root");
  });
  ASSERT_TRUE(Replay(queue).status.ok());
  ASSERT_NE(state_.FindQueue("ml"), nullptr);

  auto user = [](std::string_view op, std::string_view role) {
    return OldEntry("UpdateUser", 3000, [op, role](wire::Packer& p) {
      p.BeginMap(1);
      p.Key("update");
      p.BeginMap(2);
      p.Field("op", op);
      p.Key("spec");
      p.BeginMap(2);
      p.Field("name", "bob");
      p.Key("roles");
      p.BeginArray(1);
      p.BeginMap(2);
      p.Field("role", role);
      p.Field("queue", role == "member" ? "ml" : "");
    });
  };
  ASSERT_TRUE(Replay(user("create", "member")).status.ok());
  ASSERT_NE(state_.FindUser("bob"), nullptr);
  EXPECT_EQ(state_.FindUser("bob")->roles, (std::vector<RoleGrant>{{Role::kMember, "ml"}}));
  ASSERT_TRUE(Replay(user("grant", "admin")).status.ok());
  EXPECT_TRUE(state_.HasAdmin());
}

TEST_F(CommandReplayTest, OldTaskEventsAndNodeStatesApply) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 8), {}}).status.ok());
  const uint64_t job = Submit("train", 1, 1);
  ASSERT_TRUE(Do(ApplyPlanCmd{.binds = {Bind(job, 0, "n1", {0})}}).status.ok());
  auto event = [job](std::string_view kind) {
    return OldEntry("TaskEvent", 4000, [job, kind](wire::Packer& p) {
      p.BeginMap(1);
      p.Key("event");
      p.BeginMap(5);
      p.Field("node", "n1");
      p.Field("seq", uint64_t{1});
      p.Field("task", TaskId{JobId(job), 0, 0});
      p.Field("kind", kind);
      p.Field("pid", int64_t{4242});
    });
  };
  ASSERT_TRUE(Replay(event("started")).status.ok());
  EXPECT_EQ(state_.FindJob(JobId(job))->tasks[0].state, TaskState::kRunning);

  const std::string not_ready = OldEntry("NodeState", 5000, [](wire::Packer& p) {
    p.BeginMap(2);
    p.Field("node", "n1");
    p.Field("state", "NotReady");
  });
  ASSERT_TRUE(Replay(not_ready).status.ok());
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kNotReady);

  // A re-registration reporting the task as running, then as succeeded.
  auto registration = [job](std::string_view state) {
    return OldEntry("RegisterNode", 6000, [job, state](wire::Packer& p) {
      p.BeginMap(2);
      p.Field("node", MakeNode("n1", 8));
      p.Key("tasks");
      p.BeginArray(1);
      p.BeginMap(3);
      p.Field("task", TaskId{JobId(job), 0, 0});
      p.Field("state", state);
      p.Field("pid", int64_t{4242});
    });
  };
  ASSERT_TRUE(Replay(registration("Running")).status.ok());
  EXPECT_EQ(state_.FindJob(JobId(job))->tasks[0].state, TaskState::kRunning);
  ASSERT_TRUE(Replay(registration("Succeeded")).status.ok());
  EXPECT_EQ(state_.FindJob(JobId(job))->tasks[0].state, TaskState::kSucceeded);
}

// The health policy's actions were strings until HealthFenceAction: an old
// entry's "drain" still drains, today's encoder writes the same name, and an
// action this build does not know is refused at decode.
std::string OldFence(std::string_view action) {
  return OldEntry("HealthFence", 3000, [action](wire::Packer& p) {
    p.BeginMap(5);
    p.Field("node", "n1");
    p.Field("action", action);
    p.Field("gpu", uint32_t{0});
    p.Field("grace_ms", uint32_t{500});
    p.Field("reason", "xid 79");
  });
}

TEST_F(CommandReplayTest, OldHealthFenceEntriesApplyAndEncodeTheSame) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 8), {}}).status.ok());
  ASSERT_TRUE(Replay(OldFence("drain")).status.ok());
  EXPECT_TRUE(state_.FindNode("n1")->cordoned);
  EXPECT_EQ(state_.FindNode("n1")->cordon_reason, "health");
  EXPECT_EQ(EncodeCommand({3000, HealthFenceCmd{"n1", HealthFenceAction::kDrain, 0, 500, "xid 79"}}),
            OldFence("drain"));
  ASSERT_TRUE(Replay(OldFence("uncordon")).status.ok());
  EXPECT_FALSE(state_.FindNode("n1")->cordoned);

  auto refused = DecodeCommand(OldFence("reboot"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("'reboot' is not cordon"), std::string::npos)
      << refused.status().message();
}

TEST_F(CommandReplayTest, AnUnknownValueIsRefusedAtDecodeTyped) {
  auto decoded = DecodeCommand(OldCordon("drain"));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(decoded.status().message().find("update.op: 'drain' is not cordon"), std::string::npos)
      << decoded.status().message();

  const std::string probe = OldEntry("ProbeResult", 2000, [](wire::Packer& p) {
    p.BeginMap(1);
    p.Field("kind", "disk");
  });
  auto refused = DecodeCommand(probe);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("'disk' is not network or gpu"), std::string::npos);
}

}  // namespace
}  // namespace gpool::state
