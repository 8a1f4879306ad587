// Admission enrolment in the replicated state (issue 48): pending
// enrolments, approval, rejection, join tokens, and what apply refuses
// whatever reached the log.
#include <gtest/gtest.h>

#include "control/state/cluster_state.h"
#include "protocol/base/sha256.h"

namespace gpool::state {
namespace {

constexpr char kPendingKeyA[] = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
constexpr char kPendingKeyB[] = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";

NodeSpec PendingNode(const std::string& name, uint32_t gpus = 2) {
  NodeSpec node;
  node.name = name;
  node.cpu_milli = 8000;
  node.memory_mib = 8192;
  for (uint32_t i = 0; i < gpus; ++i) node.gpus.push_back(GpuInfo{.index = i, .uuid = "g" + std::to_string(i)});
  return node;
}

class EnrolmentStateTest : public ::testing::Test {
 protected:
  ApplyResult Do(CommandBody body, int64_t time_ms = 5'000) {
    return state_.Apply(++index_, Command{time_ms, std::move(body)});
  }
  ApplyResult Pending(const std::string& node, const std::string& key) {
    EnrolmentCmd cmd;
    cmd.op = EnrolmentCmdOp::kPending;
    cmd.pending.node = node;
    cmd.pending.key = key;
    cmd.pending.fingerprint = KeyFingerprint(key);
    cmd.pending.gpus = 8;
    return Do(cmd);
  }
  ApplyResult Decide(EnrolmentCmdOp op, const std::string& node, const std::string& fingerprint = "") {
    EnrolmentCmd cmd;
    cmd.op = op;
    cmd.node = node;
    cmd.fingerprint = fingerprint;
    return Do(cmd);
  }
  ApplyResult Register(const std::string& node, const std::string& key, const std::string& token = "",
                       int64_t time_ms = 5'000) {
    RegisterNodeCmd cmd{PendingNode(node), {}, {}, key, /*admission=*/true, token.empty() ? "" : Sha256::Of(token)};
    return Do(cmd, time_ms);
  }
  ApplyResult CreateToken(const std::string& secret, int64_t expires_ms,
                          std::map<std::string, std::string> labels = {}) {
    EnrolmentCmd cmd;
    cmd.op = EnrolmentCmdOp::kCreateToken;
    cmd.token.hash = Sha256::Of(secret);
    cmd.token.id = cmd.token.hash.substr(0, 12);
    cmd.token.expires_ms = expires_ms;
    cmd.token.creator = "root";
    cmd.token.labels = std::move(labels);
    return Do(cmd);
  }
  ClusterState state_;
  uint64_t index_ = 0;
};

TEST_F(EnrolmentStateTest, AnUnadmittedKeyRegistersNothingUntilApproved) {
  EXPECT_EQ(Register("rogue", kPendingKeyA).status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(state_.FindNode("rogue"), nullptr);
  ASSERT_TRUE(Pending("rogue", kPendingKeyA).status.ok());
  ASSERT_EQ(state_.pending_enrolments().size(), 1u);
  EXPECT_EQ(state_.pending_enrolments().at(kPendingKeyA).first_seen_ms, 5'000);
  EXPECT_EQ(state_.pending_enrolments().at(kPendingKeyA).gpus, 8u);
  EXPECT_EQ(Register("rogue", kPendingKeyA).status.code(), StatusCode::kPermissionDenied);

  ASSERT_TRUE(Decide(EnrolmentCmdOp::kApprove, "rogue").status.ok());
  EXPECT_TRUE(state_.pending_enrolments().empty());
  EXPECT_EQ(state_.enrolled_nodes().at("rogue"), kPendingKeyA);
  EXPECT_TRUE(Register("rogue", kPendingKeyA).status.ok());
  ASSERT_NE(state_.FindNode("rogue"), nullptr);
  EXPECT_EQ(state_.FindNode("rogue")->worker_key, kPendingKeyA);
  // Bound now: the next registration needs no approval; another key none.
  EXPECT_TRUE(Register("rogue", kPendingKeyA).status.ok());
  EXPECT_EQ(Register("rogue", kPendingKeyB).status.code(), StatusCode::kUnauthenticated);
}

TEST_F(EnrolmentStateTest, TwoKeysClaimingANameNeedAFingerprintAndRejectDropsThem) {
  ASSERT_TRUE(Pending("gpu-7", kPendingKeyA).status.ok());
  ASSERT_TRUE(Pending("gpu-7", kPendingKeyB).status.ok());
  EXPECT_EQ(Decide(EnrolmentCmdOp::kApprove, "gpu-7").status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Decide(EnrolmentCmdOp::kApprove, "gpu-8").status.code(), StatusCode::kNotFound);
  ASSERT_TRUE(Decide(EnrolmentCmdOp::kReject, "gpu-7", KeyFingerprint(kPendingKeyA)).status.ok());
  ASSERT_EQ(state_.pending_enrolments().size(), 1u);
  ASSERT_TRUE(Decide(EnrolmentCmdOp::kApprove, "gpu-7", KeyFingerprint(kPendingKeyB)).status.ok());
  EXPECT_EQ(state_.enrolled_nodes().at("gpu-7"), kPendingKeyB);
  EXPECT_EQ(Register("gpu-7", kPendingKeyA).status.code(), StatusCode::kUnauthenticated);
}

TEST_F(EnrolmentStateTest, PendingEnrolmentsAreBounded) {
  for (size_t i = 0; i < ClusterState::kMaxPendingEnrolments; ++i) {
    ASSERT_TRUE(Pending("n" + std::to_string(i), "key-" + std::to_string(i)).status.ok());
  }
  EXPECT_EQ(Pending("one-more", "key-x").status.code(), StatusCode::kResourceExhausted);
  // A known key seen again is a refresh, not a new entry.
  EXPECT_TRUE(Pending("n0", "key-0").status.ok());
  EXPECT_EQ(state_.pending_enrolments().size(), ClusterState::kMaxPendingEnrolments);
  EXPECT_EQ(state_.pending_enrolments().at("key-0").registrations, 2u);
}

TEST_F(EnrolmentStateTest, AJoinTokenAdmitsOnceWithItsLabelsUnlessExpiredOrRevoked) {
  ASSERT_TRUE(CreateToken("secret-1", 60'000, {{"rack", "r7"}}).status.ok());
  ASSERT_TRUE(CreateToken("secret-2", 60'000).status.ok());
  ASSERT_TRUE(CreateToken("secret-3", 60'000).status.ok());
  EXPECT_EQ(Register("n1", kPendingKeyA, "wrong").status.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(state_.FindNode("n1"), nullptr);
  ASSERT_TRUE(Register("n1", kPendingKeyA, "secret-1").status.ok());
  EXPECT_EQ(state_.FindNode("n1")->admin_labels.at("rack"), "r7");
  EXPECT_EQ(state_.join_tokens().at(Sha256::Of("secret-1").substr(0, 12)).used_by, "n1");
  ApplyResult reused = Register("n2", kPendingKeyB, "secret-1");
  EXPECT_EQ(reused.status.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(reused.status.message().find("already used"), std::string::npos);
  EXPECT_EQ(Register("n2", kPendingKeyB, "secret-2", 60'000).status.code(), StatusCode::kUnauthenticated);  // expired
  EnrolmentCmd revoke;
  revoke.op = EnrolmentCmdOp::kRevokeToken;
  revoke.token.id = Sha256::Of("secret-3").substr(0, 12);
  ASSERT_TRUE(Do(revoke).status.ok());
  EXPECT_EQ(Register("n2", kPendingKeyB, "secret-3").status.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(state_.FindNode("n2"), nullptr);
  // A used token cannot be revoked; an unknown one is NotFound.
  revoke.token.id = Sha256::Of("secret-1").substr(0, 12);
  EXPECT_EQ(Do(revoke).status.code(), StatusCode::kFailedPrecondition);
  revoke.token.id = "000000000000";
  EXPECT_EQ(Do(revoke).status.code(), StatusCode::kNotFound);
}

TEST_F(EnrolmentStateTest, ASnapshotKeepsPendingEnrolmentsAndTokens) {
  ASSERT_TRUE(Pending("gpu-7", kPendingKeyA).status.ok());
  ASSERT_TRUE(CreateToken("secret-1", 60'000, {{"rack", "r7"}}).status.ok());
  ClusterState copy;
  ASSERT_TRUE(copy.Restore(state_.Snapshot()).ok());
  ASSERT_EQ(copy.pending_enrolments().size(), 1u);
  EXPECT_EQ(copy.pending_enrolments().at(kPendingKeyA).node, "gpu-7");
  ASSERT_EQ(copy.join_tokens().size(), 1u);
  EXPECT_EQ(copy.join_tokens().begin()->second.labels.at("rack"), "r7");
  EXPECT_TRUE(copy.CheckJoinToken(Sha256::Of("secret-1"), 5'000).ok());
}

// Entries written before admission existed (no `admission` field) still
// bind on first use when replayed.
TEST_F(EnrolmentStateTest, OldRegistrationsReplayAsFirstUse) {
  RegisterNodeCmd old{PendingNode("legacy"), {}, {}, kPendingKeyA};
  auto decoded = DecodeCommand(EncodeCommand(Command{5'000, old}));
  ASSERT_TRUE(decoded.ok());
  EXPECT_FALSE(std::get<RegisterNodeCmd>(decoded->body).admission);
  EXPECT_TRUE(state_.Apply(++index_, *decoded).status.ok());
  EXPECT_EQ(state_.FindNode("legacy")->worker_key, kPendingKeyA);
}

}  // namespace
}  // namespace gpool::state
