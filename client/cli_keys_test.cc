// `gpool admin keygen` and the CurveZMQ global flags (cli_keys.cc, cli.cc).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "client/cli_test_fixture.h"
#include "protocol/messages_nodes.h"
#include "protocol/model/node_update.h"
#include "protocol/security/keys.h"

namespace gpool {
namespace {

using client::testing::CliTest;

class CliKeysTest : public CliTest {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpool-cli-keys-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(CliKeysTest, KeygenWritesASecretAndAPublicFile) {
  ASSERT_EQ(Run({"admin", "keygen", "--out", Path("alice")}), kExitOk) << err_.str();
  struct stat st {};
  ASSERT_EQ(stat(Path("alice.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto pair = security::ReadSecretKeyFile(Path("alice.key"));
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  auto pub = security::ReadPublicKeyFile(Path("alice.pub"));
  ASSERT_TRUE(pub.ok());
  EXPECT_EQ(*pub, pair->public_key);
  EXPECT_NE(out_.str().find(pair->public_key), std::string::npos) << out_.str();
  // Never over an existing identity.
  EXPECT_NE(Run({"admin", "keygen", "--out", Path("alice")}), kExitOk);
  EXPECT_NE(err_.str().find("not overwritten"), std::string::npos) << err_.str();
  EXPECT_EQ(*security::ReadSecretKeyFile(Path("alice.key")), *pair);
  EXPECT_NE(Run({"admin", "keygen"}), kExitOk);
}

TEST_F(CliKeysTest, KeyFilesFromFlagsOrEnvironmentSecureTheClient) {
  ASSERT_EQ(Run({"admin", "keygen", "--out", Path("user")}), kExitOk);
  ASSERT_EQ(Run({"admin", "keygen", "--out", Path("coordinator")}), kExitOk);
  ASSERT_EQ(Run({"jobs", "--key-file", Path("user.key"), "--coordinator-key", Path("coordinator.pub")}), kExitOk)
      << err_.str();
  EXPECT_EQ(options_.curve_keys, *security::ReadSecretKeyFile(Path("user.key")));
  ASSERT_EQ(options_.server_keys.size(), 1u);
  EXPECT_EQ(options_.server_keys[0], *security::ReadPublicKeyFile(Path("coordinator.pub")));

  environment_["GPOOL_KEY_FILE"] = Path("user.key");
  environment_["GPOOL_COORDINATOR_KEY"] = Path("coordinator.pub");
  options_ = {};
  ASSERT_EQ(Run({"jobs"}), kExitOk) << err_.str();
  EXPECT_FALSE(options_.curve_keys.secret_key.empty());
  // --insecure wins.
  options_ = {};
  ASSERT_EQ(Run({"jobs", "--insecure"}), kExitOk) << err_.str();
  EXPECT_TRUE(options_.curve_keys.secret_key.empty());
}

TEST_F(CliKeysTest, DefaultFilesUnderTheConfigDirAreUsedWhenBothExist) {
  environment_["HOME"] = Path("home");
  std::filesystem::create_directories(dir_ / "home/.config/gpool");
  ASSERT_EQ(Run({"jobs"}), kExitOk);
  EXPECT_TRUE(options_.curve_keys.secret_key.empty());  // none set up: plaintext
  ASSERT_EQ(Run({"admin", "keygen", "--out", Path("home/.config/gpool/user")}), kExitOk);
  ASSERT_EQ(Run({"admin", "keygen", "--out", Path("home/.config/gpool/coordinator")}), kExitOk);
  options_ = {};
  ASSERT_EQ(Run({"jobs"}), kExitOk) << err_.str();
  EXPECT_FALSE(options_.curve_keys.secret_key.empty());
}

TEST_F(CliKeysTest, AnExplicitKeyFileThatCannotBeUsedFails) {
  ASSERT_EQ(Run({"admin", "keygen", "--out", Path("user")}), kExitOk);
  ASSERT_EQ(chmod(Path("user.key").c_str(), 0644), 0);
  EXPECT_NE(Run({"jobs", "--key-file", Path("user.key"), "--coordinator-key", Path("user.pub")}), kExitOk);
  EXPECT_NE(err_.str().find("chmod 600"), std::string::npos) << err_.str();
  EXPECT_NE(Run({"jobs", "--key-file", Path("missing.key")}), kExitOk);
}

TEST_F(CliKeysTest, ReplicaAddCarriesThePublicKey) {
  ASSERT_EQ(Run({"admin", "keygen", "--out", Path("replica-4")}), kExitOk);
  ASSERT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr", "tcp://10.0.0.4:7402", "--replica-key",
                 Path("replica-4.pub")}),
            kExitOk)
      << err_.str();
  ASSERT_EQ(cluster_->replica_changes.size(), 1u);
  EXPECT_EQ(cluster_->replica_changes[0].public_key, *security::ReadPublicKeyFile(Path("replica-4.pub")));
}

TEST_F(CliKeysTest, ReplicaRotateKeySendsTheNewKeyAndTheGrace) {
  ASSERT_EQ(Run({"admin", "keygen", "--out", Path("replica-2-new")}), kExitOk);
  cluster_->voters = {1, 2, 3};
  ASSERT_EQ(Run({"admin", "replica", "rotate-key", "2", "--replica-key", Path("replica-2-new.pub"), "--grace", "1h"}),
            kExitOk)
      << err_.str();
  ASSERT_EQ(cluster_->replica_changes.size(), 1u);
  const ChangeReplicas& sent = cluster_->replica_changes[0];
  EXPECT_EQ(sent.op, ReplicaOp::kRotateKey);
  EXPECT_EQ(sent.replica_id, 2u);
  EXPECT_EQ(sent.public_key, *security::ReadPublicKeyFile(Path("replica-2-new.pub")));
  EXPECT_EQ(sent.grace_ms, 3'600'000u);
  EXPECT_NE(out_.str().find("still admitted for 1h"), std::string::npos) << out_.str();
  // Bad input is refused before anything is sent.
  EXPECT_NE(Run({"admin", "replica", "rotate-key", "2", "--replica-key", Path("replica-2-new.pub"), "--grace",
                 "soon"}),
            kExitOk);
  EXPECT_NE(Run({"admin", "replica", "rotate-key", "2"}), kExitOk);
  EXPECT_NE(Run({"admin", "replica", "rotate-key", "2", "--replica-key", Path("missing.pub")}), kExitOk);
  EXPECT_EQ(cluster_->replica_changes.size(), 1u);
}

TEST_F(CliKeysTest, NodeEnrolSendsTheNewKey) {
  ASSERT_EQ(Run({"admin", "keygen", "--out", Path("node-new")}), kExitOk);
  NodeSummary n1;
  n1.name = "n1";
  n1.state = "Ready";
  cluster_->nodes.nodes.push_back(n1);
  const int code = Run({"admin", "node", "enrol", "n1", "--node-key", Path("node-new.pub")});
  ASSERT_FALSE(cluster_->node_updates.empty()) << err_.str();
  const UpdateNode& update = cluster_->node_updates.back();
  EXPECT_EQ(update.node, "n1");
  EXPECT_EQ(update.op, NodeUpdateOp::kWorkerKey);
  EXPECT_EQ(update.key, *security::ReadPublicKeyFile(Path("node-new.pub")));
  EXPECT_EQ(code, kExitOk) << err_.str();
  EXPECT_NE(Run({"admin", "node", "enrol", "n1"}), kExitOk);
  EXPECT_EQ(update.grace_ms, 0u);  // no --grace: the old key is refused at once, as before
}

TEST_F(CliKeysTest, NodeEnrolCarriesTheGraceAndRefusesABadOne) {
  ASSERT_EQ(Run({"admin", "keygen", "--out", Path("node-new")}), kExitOk);
  NodeSummary n1;
  n1.name = "n1";
  n1.state = "Ready";
  cluster_->nodes.nodes.push_back(n1);
  ASSERT_EQ(Run({"admin", "node", "enrol", "n1", "--node-key", Path("node-new.pub"), "--grace", "10m"}), kExitOk)
      << err_.str();
  ASSERT_EQ(cluster_->node_updates.size(), 1u);
  EXPECT_EQ(cluster_->node_updates.back().grace_ms, 600'000u);
  EXPECT_NE(out_.str().find("previous key is still admitted for 10m"), std::string::npos) << out_.str();
  // A grace that is not a duration sends nothing.
  EXPECT_NE(Run({"admin", "node", "enrol", "n1", "--node-key", Path("node-new.pub"), "--grace", "soon"}), kExitOk);
  EXPECT_NE(err_.str().find("--grace"), std::string::npos) << err_.str();
  EXPECT_EQ(cluster_->node_updates.size(), 1u);
}

}  // namespace
}  // namespace gpool
