// `gpool whoami`, `gpool audit` and `gpool admin bootstrap|user|role` (cli_users.cc).
#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "client/cli.h"
#include "client/cli_test_fixture.h"
#include "client/testing/fake_client.h"
#include "protocol/messages_client.h"
#include "protocol/messages_users.h"
#include "protocol/model/users.h"

namespace gpool {
namespace {

using client::testing::CliTest;

constexpr char kKey[] = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";

TEST_F(CliTest, AdminUserCreateReadsTheKeyFileAndSendsTheUser) {
  const std::string path = ::testing::TempDir() + "/alice.pub";
  {
    std::ofstream pub(path);
    pub << "public-key = \"" << kKey << "\"\n";  // as `gpool admin keygen` writes it
  }
  ASSERT_EQ(Run({"admin", "user", "create", "alice", "--key", path, "--uid", "1000"}), kExitOk) << err_.str();
  const UserSpec& alice = cluster_->users.at("alice");
  EXPECT_EQ(alice.keys, std::vector<std::string>{kKey});
  EXPECT_EQ(alice.uid, 1000);
  EXPECT_EQ(alice.gid, 1000);  // the uid's, when not given
  EXPECT_NE(out_.str().find("user alice: create done"), std::string::npos) << out_.str();
  std::remove(path.c_str());
}

TEST_F(CliTest, AdminRoleGrantAndUserListShowTheRoles) {
  cluster_->users["bob"] = UserSpec{"bob"};
  ASSERT_EQ(Run({"admin", "role", "grant", "bob", "member", "--queue", "ml"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->users.at("bob").roles, (std::vector<RoleGrant>{{Role::kMember, "ml"}}));
  out_.str("");
  ASSERT_EQ(Run({"admin", "user", "list"}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("member:ml"), std::string::npos) << out_.str();
}

// Issue 48: rotate-key adds the new key and retires the old one after --grace.
TEST_F(CliTest, AdminUserRotateKeySendsTheNewKeyTheRetiredOneAndTheGrace) {
  constexpr char kNew[] = "0123456789abcdefghij0123456789abcdefghij";
  cluster_->users["alice"] = UserSpec{"alice", {kKey}};
  ASSERT_EQ(Run({"admin", "user", "rotate-key", "alice", "--key", kNew, "--retire", kKey, "--grace", "24h"}), kExitOk)
      << err_.str();
  ASSERT_EQ(cluster_->user_updates.size(), 1u);
  const UpdateUser& sent = cluster_->user_updates.back();
  EXPECT_EQ(sent.op, UserOp::kRotateKey);
  EXPECT_EQ(sent.spec.keys, std::vector<std::string>{kNew});
  EXPECT_EQ(sent.retire_keys, std::vector<std::string>{kKey});
  EXPECT_EQ(sent.grace_ms, 24u * 3600 * 1000);
  EXPECT_NE(out_.str().find("user alice: rotate-key done"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("(retired: refused)"), std::string::npos) << out_.str();  // the fake's epoch deadline
  // Without --retire, or with a grace that is not a duration, nothing is sent.
  EXPECT_EQ(Run({"admin", "user", "rotate-key", "alice", "--key", kNew}), kExitUsage);
  EXPECT_EQ(Run({"admin", "user", "rotate-key", "alice", "--key", kNew, "--retire", kKey, "--grace", "soon"}),
            kExitUsage);
  EXPECT_EQ(Run({"admin", "user", "add-key", "alice", "--key", kNew, "--grace", "1h"}), kExitUsage);
  EXPECT_EQ(cluster_->user_updates.size(), 1u);
}

TEST_F(CliTest, BadUserArgumentsAreUsageErrorsBeforeAnythingIsSent) {
  EXPECT_EQ(Run({"admin", "role", "grant", "bob", "member"}), kExitUsage);  // member needs --queue
  EXPECT_EQ(Run({"admin", "role", "grant", "bob", "root"}), kExitUsage);
  EXPECT_EQ(Run({"admin", "user", "create", "bad|name"}), kExitUsage);
  EXPECT_EQ(Run({"admin", "user", "create", "carol", "--key", "/no/such/file"}), kExitUsage);
  EXPECT_EQ(Run({"admin", "user", "frobnicate", "carol"}), kExitUsage);
  EXPECT_TRUE(cluster_->users.empty());
}

TEST_F(CliTest, BootstrapWhoAmIAndAudit) {
  ASSERT_EQ(Run({"admin", "bootstrap", "root", "--uid", "0"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->users.at("root").roles, (std::vector<RoleGrant>{{Role::kAdmin, ""}}));
  cluster_->whoami = WhoAmIReply{"user", cluster_->users.at("root")};
  out_.str("");
  ASSERT_EQ(Run({"whoami"}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("User root"), std::string::npos) << out_.str();
  cluster_->audit = {AuditEntry{1, 0, "mem", "CancelJob", "job 3", false, "cancel-job on queue web"},
                     AuditEntry{2, 0, "root", "SubmitJob", "queue ml", true, ""}};
  out_.str("");
  ASSERT_EQ(Run({"audit", "--after", "1"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str().find("CancelJob"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("SubmitJob"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("allowed"), std::string::npos) << out_.str();
}

}  // namespace
}  // namespace gpool
