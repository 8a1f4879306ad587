// `gpool node pending|approve|reject` and `gpool admin join-token
// create|list|revoke` (cli_enrolment.cc), against the fake client.
#include <gtest/gtest.h>

#include "client/cli.h"
#include "client/cli_test_fixture.h"
#include "client/testing/fake_client.h"
#include "protocol/messages_enrolment.h"

namespace gpool {
namespace {

using client::testing::CliTest;

class EnrolmentCliTest : public CliTest {};

TEST_F(EnrolmentCliTest, PendingListsNameFingerprintAndDevices) {
  PendingEnrolment pending;
  pending.node = "gpu-17";
  pending.fingerprint = "SHA256:3f9c0e51a2b4d7e8";
  pending.gpus = 8;
  pending.gpu_model = "H100";
  cluster_->enrolment_reply.pending = {pending};
  ASSERT_EQ(Run({"node", "pending"}), kExitOk) << err_.str();
  ASSERT_EQ(cluster_->enrolments.size(), 1u);
  EXPECT_EQ(cluster_->enrolments[0].op, EnrolmentOp::kListPending);
  EXPECT_NE(out_.str().find("gpu-17"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("SHA256:3f9c0e51a2b4d7e8"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("8 x H100"), std::string::npos) << out_.str();
}

TEST_F(EnrolmentCliTest, ApproveAndRejectSendTheNodeAndFingerprint) {
  ASSERT_EQ(Run({"node", "approve", "gpu-17", "--fingerprint", "SHA256:ab"}), kExitOk) << err_.str();
  ASSERT_EQ(Run({"node", "reject", "gpu-18"}), kExitOk) << err_.str();
  ASSERT_EQ(cluster_->enrolments.size(), 2u);
  EXPECT_EQ(cluster_->enrolments[0].op, EnrolmentOp::kApprove);
  EXPECT_EQ(cluster_->enrolments[0].node, "gpu-17");
  EXPECT_EQ(cluster_->enrolments[0].fingerprint, "SHA256:ab");
  EXPECT_EQ(cluster_->enrolments[1].op, EnrolmentOp::kReject);
  EXPECT_EQ(cluster_->enrolments[1].node, "gpu-18");
  // Misuse is refused before anything is sent.
  EXPECT_EQ(Run({"node", "approve"}), kExitUsage);
  EXPECT_EQ(Run({"node", "cordon", "gpu-17", "--fingerprint", "x"}), kExitUsage);
  EXPECT_EQ(cluster_->enrolments.size(), 2u);
}

TEST_F(EnrolmentCliTest, JoinTokenCreatePrintsOnlyTheTokenOnStdout) {
  cluster_->enrolment_reply.token = "gpool-join-abc";
  ASSERT_EQ(Run({"admin", "join-token", "create", "--ttl", "1h", "--labels", "rack=r7,team=vision"}), kExitOk)
      << err_.str();
  EXPECT_EQ(out_.str(), "gpool-join-abc\n");
  ASSERT_EQ(cluster_->enrolments.size(), 1u);
  EXPECT_EQ(cluster_->enrolments[0].op, EnrolmentOp::kCreateToken);
  EXPECT_EQ(cluster_->enrolments[0].ttl_ms, 3'600'000u);
  EXPECT_EQ(cluster_->enrolments[0].labels, (std::map<std::string, std::string>{{"rack", "r7"}, {"team", "vision"}}));
  EXPECT_NE(Run({"admin", "join-token", "create"}), kExitOk);  // --ttl is required
  EXPECT_NE(Run({"admin", "join-token", "create", "--ttl", "1h", "--labels", "novalue"}), kExitOk);
  EXPECT_EQ(cluster_->enrolments.size(), 1u);
  ASSERT_EQ(Run({"admin", "join-token", "revoke", "5d0c12345678"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->enrolments.back().op, EnrolmentOp::kRevokeToken);
  EXPECT_EQ(cluster_->enrolments.back().token_id, "5d0c12345678");
}

}  // namespace
}  // namespace gpool
