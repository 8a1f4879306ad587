// Admission enrolment at the node registry (issue 48): a worker key no admin
// admitted registers as a pending enrolment, never as a node, so nothing can
// be bound to it; approval or a join token makes it a node.
#include <gtest/gtest.h>

#include "control/node_registry.h"
#include "control/security/key_directory.h"
#include "control/testing/fake_ports.h"
#include "protocol/base/sha256.h"
#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"

namespace gpool::control {
namespace {

const std::string kKey(40, 'k');
const std::string kOtherKey(40, 'o');

Principal StrangerNode(const std::string& key) { return Principal{Principal::Kind::kNewNode, "", key}; }

class NodeAdmissionTest : public ::testing::Test {
 protected:
  NodeAdmissionTest() {
    NodeRegistryOptions options;
    options.keys = &keys_;
    registry_ = std::make_unique<NodeRegistry>(options, state_, workers_, outbox_, proposer_, /*start_ms=*/0);
  }
  void Register(const std::string& peer, const std::string& node, const std::string& key,
                const std::string& token = "") {
    RegisterNode msg{OneGpuNode(node), {}, "test"};
    msg.join_token = token;
    registry_->OnFrame(peer, EncodeEnvelope(Header{.request_id = 1}, msg), now_ += 10, StrangerNode(key));
  }
  Envelope Last() { return DecodeEnvelope(outbox_.sent.back().frame).value(); }
  std::string LastError() {
    auto error = Last().Body<ErrorReply>();
    return error.ok() ? error->code : "(not an error)";
  }
  void Commit(state::CommandBody body) {
    proposer_.Propose(std::move(body), [](const state::ApplyResult& result) {
      ASSERT_TRUE(result.status.ok()) << result.status.ToString();
    });
  }

  int64_t now_ = 0;
  state::ClusterState state_;
  WorkerTable workers_;
  ImmediateProposer proposer_{state_};
  RecordingOutbox outbox_;
  KeyDirectory keys_;
  std::unique_ptr<NodeRegistry> registry_;
};

TEST_F(NodeAdmissionTest, AStrangerIsPendingNotANodeUntilApproved) {
  Register("peer-a", "rogue", kKey);
  EXPECT_EQ(LastError(), "PermissionDenied");
  EXPECT_EQ(state_.FindNode("rogue"), nullptr);
  EXPECT_EQ(workers_.NodeAt("peer-a"), nullptr);  // no connection: the dispatcher has nowhere to send
  ASSERT_EQ(state_.pending_enrolments().size(), 1u);
  const PendingEnrolment& pending = state_.pending_enrolments().at(kKey);
  EXPECT_EQ(pending.node, "rogue");
  EXPECT_EQ(pending.fingerprint, KeyFingerprint(kKey));
  EXPECT_EQ(pending.gpus, 1u);
  // Retries are answered without a log entry each.
  const size_t before = proposer_.proposed().size();
  Register("peer-a", "rogue", kKey);
  EXPECT_EQ(LastError(), "PermissionDenied");
  EXPECT_EQ(proposer_.proposed().size(), before);

  state::EnrolmentCmd approve;
  approve.op = state::EnrolmentCmdOp::kApprove;
  approve.node = "rogue";
  Commit(approve);
  Register("peer-a", "rogue", kKey);
  EXPECT_EQ(Last().type(), MessageType::kRegisterNodeReply);
  ASSERT_NE(state_.FindNode("rogue"), nullptr);
  EXPECT_EQ(keys_.KeyOfNode("rogue"), kKey);
}

TEST_F(NodeAdmissionTest, AJoinTokenAdmitsAtOnceAndIsRefusedTheSecondTime) {
  state::EnrolmentCmd create;
  create.op = state::EnrolmentCmdOp::kCreateToken;
  create.token.hash = Sha256::Of("the-token");
  create.token.id = create.token.hash.substr(0, 12);
  create.token.expires_ms = INT64_MAX;
  Commit(create);
  Register("peer-a", "n1", kKey, "the-token");
  EXPECT_EQ(Last().type(), MessageType::kRegisterNodeReply);
  EXPECT_NE(state_.FindNode("n1"), nullptr);
  Register("peer-b", "n2", kOtherKey, "the-token");
  EXPECT_EQ(LastError(), "Unauthenticated");
  EXPECT_EQ(state_.FindNode("n2"), nullptr);
  EXPECT_TRUE(state_.pending_enrolments().empty());  // refused, not pending
  // The admitted node re-registers without its (spent) token being looked at.
  Register("peer-a2", "n1", kKey, "the-token");
  EXPECT_EQ(Last().type(), MessageType::kRegisterNodeReply);
}

TEST_F(NodeAdmissionTest, AFullPendingTableRefusesNewKeysWithoutProposing) {
  for (size_t i = 0; i < state::ClusterState::kMaxPendingEnrolments; ++i) {
    std::string key(40, 'a');
    key.replace(0, std::to_string(i).size(), std::to_string(i));
    Register("peer-" + std::to_string(i), "n" + std::to_string(i), key);
  }
  ASSERT_EQ(state_.pending_enrolments().size(), state::ClusterState::kMaxPendingEnrolments);
  const size_t before = proposer_.proposed().size();
  Register("peer-x", "flood", kOtherKey);
  EXPECT_EQ(LastError(), "ResourceExhausted");
  EXPECT_EQ(proposer_.proposed().size(), before);
}

}  // namespace
}  // namespace gpool::control
