// NodeLabelSync (node_label_sync.h): a heartbeat naming other operator
// labels than the state's gets the node the state's labels, once at a time
// and not again within the resend window; equal labels, a worker that does
// not take labels, or an unknown node get nothing.
#include "control/node_label_sync.h"

#include <gtest/gtest.h>

#include "control/testing/fake_ports.h"
#include "protocol/labels_digest.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"

namespace gpool::control {
namespace {

class NodeLabelSyncTest : public ::testing::Test {
 protected:
  NodeLabelSyncTest() {
    proposer_.Propose(state::RegisterNodeCmd{OneGpuNode("n1"), {}}, [](const auto&) {});
    workers_.Connect("n1", "peer-n1", 0, 0);
    Label({{"repair.gpool.io/gpu-reset", "off"}}, {});
  }
  void Label(std::map<std::string, std::string> set, std::vector<std::string> remove) {
    UpdateNode update;
    update.node = "n1";
    update.op = NodeUpdateOp::kLabel;
    update.labels = std::move(set);
    update.remove_labels = std::move(remove);
    proposer_.Propose(state::UpdateNodeCmd{update},
                      [](const state::ApplyResult& r) { ASSERT_TRUE(r.status.ok()) << r.status.ToString(); });
  }
  // The NodeLabels sent since the last call, with their request ids.
  std::vector<std::pair<uint64_t, NodeLabels>> Sent() {
    std::vector<std::pair<uint64_t, NodeLabels>> out;
    for (const auto& frame : outbox_.sent) {
      auto env = DecodeEnvelope(frame.frame);
      EXPECT_TRUE(env.ok());
      if (!env.ok() || env->type() != MessageType::kNodeLabels) continue;
      EXPECT_EQ(frame.peer, "peer-n1");
      out.emplace_back(env->header().request_id, *env->Body<NodeLabels>());
    }
    outbox_.sent.clear();
    return out;
  }

  state::ClusterState state_;
  WorkerTable workers_;
  RequestIds request_ids_;
  ImmediateProposer proposer_{state_};
  RecordingOutbox outbox_;
  WorkerRelay relay_{WorkerRelayOptions{.timeout_ms = 500}, workers_, request_ids_, outbox_, proposer_};
  NodeLabelSync sync_{state_, relay_};
};

TEST_F(NodeLabelSyncTest, ADifferingHeartbeatGetsTheStatesLabelsOnceAtATime) {
  sync_.NodeHeartbeat("n1", LabelsDigest({}), 1000);
  auto sent = Sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].second.node, "n1");
  EXPECT_EQ(sent[0].second.labels, (std::map<std::string, std::string>{{"repair.gpool.io/gpu-reset", "off"}}));

  sync_.NodeHeartbeat("n1", LabelsDigest({}), 1200);
  EXPECT_TRUE(Sent().empty()) << "one in flight at a time";
  relay_.WorkerReplied("n1", WorkerReply(sent[0].first, Ack{}));
  sync_.NodeHeartbeat("n1", LabelsDigest({}), 1400);  // sent before the worker took them
  EXPECT_TRUE(Sent().empty()) << "the same labels are not sent again within the resend window";
  sync_.NodeHeartbeat("n1", LabelsDigest({{"repair.gpool.io/gpu-reset", "off"}}), 1600);
  EXPECT_TRUE(Sent().empty()) << "the worker holds them";

  // An operator's change goes out with the next heartbeat.
  Label({{"zone", "b"}}, {"repair.gpool.io/gpu-reset"});
  sync_.NodeHeartbeat("n1", LabelsDigest({{"repair.gpool.io/gpu-reset", "off"}}), 1800);
  sent = Sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].second.labels, (std::map<std::string, std::string>{{"zone", "b"}}));
  EXPECT_EQ(sync_.pushes(), 2u);
}

TEST_F(NodeLabelSyncTest, ARefusedOrUnansweredPushIsAskedAgainAfterTheResendWindow) {
  sync_.NodeHeartbeat("n1", LabelsDigest({}), 0);
  auto sent = Sent();
  ASSERT_EQ(sent.size(), 1u);
  relay_.WorkerReplied("n1", WorkerReply(sent[0].first, ErrorReply::FromStatus(Status::InvalidArgument("no"))));
  sync_.NodeHeartbeat("n1", LabelsDigest({}), NodeLabelSync::kResendMs - 1);
  EXPECT_TRUE(Sent().empty());
  sync_.NodeHeartbeat("n1", LabelsDigest({}), NodeLabelSync::kResendMs);
  sent = Sent();
  ASSERT_EQ(sent.size(), 1u);
  relay_.Tick(NodeLabelSync::kResendMs + 500);  // no answer: the relay gives up on it
  sync_.NodeHeartbeat("n1", LabelsDigest({}), 2 * NodeLabelSync::kResendMs);
  EXPECT_EQ(Sent().size(), 1u);
}

TEST_F(NodeLabelSyncTest, NothingForAWorkerWithoutLabelsAnUnknownNodeOrEqualLabels) {
  sync_.NodeHeartbeat("n1", 0, 0);
  sync_.NodeHeartbeat("n9", LabelsDigest({}), 0);
  sync_.NodeHeartbeat("n1", LabelsDigest({{"repair.gpool.io/gpu-reset", "off"}}), 0);
  EXPECT_TRUE(Sent().empty());
  EXPECT_EQ(sync_.pushes(), 0u);
}

// A reconnected worker (a restart holds no labels) is sent them at once,
// whatever was sent to its old connection.
TEST_F(NodeLabelSyncTest, AReconnectedWorkerIsSentThemAtOnce) {
  sync_.NodeHeartbeat("n1", LabelsDigest({}), 0);
  ASSERT_EQ(Sent().size(), 1u);
  sync_.NodeConnected("n1");
  workers_.Connect("n1", "peer-n1", 10, 10);
  sync_.NodeHeartbeat("n1", LabelsDigest({}), 10);
  EXPECT_EQ(Sent().size(), 1u);
}

}  // namespace
}  // namespace gpool::control
