// `gpool admin replica add|remove|list` (cli_admin.cc).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "client/cli.h"
#include "client/cli_test_fixture.h"
#include "client/testing/fake_client.h"
#include "protocol/messages_admin.h"

namespace gpool {
namespace {

using client::testing::CliTest;

// --- admin replica ----------------------------------------------------------------

TEST_F(CliTest, AdminReplicaAddSendsTheRequestAndPrintsTheVoters) {
  cluster_->status.commit_index = 56;
  ASSERT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr", "tcp://10.0.0.4:7402", "--client-addr",
                 "tcp://10.0.0.4:7400", "--worker-addr", "tcp://10.0.0.4:7401"}),
            kExitOk)
      << err_.str();
  EXPECT_EQ(out_.str(),
            "replica 4 added as a learner; it becomes a voter by itself once it has caught up; voters now 1, 2, 3, "
            "learners 4 (committed at index 57)\n");
  EXPECT_EQ(err_.str(), "");
  ASSERT_EQ(cluster_->replica_changes.size(), 1u);
  const ChangeReplicas& request = cluster_->replica_changes[0];
  EXPECT_EQ(request.op, ReplicaOp::kAdd);
  EXPECT_EQ(request.replica_id, 4u);
  EXPECT_EQ(request.peer_address, "tcp://10.0.0.4:7402");
  EXPECT_EQ(request.client_address, "tcp://10.0.0.4:7400");
  EXPECT_EQ(request.worker_address, "tcp://10.0.0.4:7401");
}

TEST_F(CliTest, AdminReplicaAddWithoutClientAddrAndOtherTransports) {
  ASSERT_EQ(Run({"admin", "replica", "add", "9", "--peer-addr=ipc:///tmp/gpool-9.sock"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->replica_changes.back().peer_address, "ipc:///tmp/gpool-9.sock");
  EXPECT_EQ(cluster_->replica_changes.back().client_address, "");
  // Global flags may come anywhere; flags before the ID are fine too.
  ASSERT_EQ(Run({"-c", "tcp://h:1", "admin", "replica", "add", "--peer-addr", "inproc://r10",
                 "--client-addr", "tcp://[::1]:7400", "10"}),
            kExitOk)
      << err_.str();
  EXPECT_EQ(options_.endpoints, "tcp://h:1");
  EXPECT_EQ(cluster_->replica_changes.back().replica_id, 10u);
  EXPECT_EQ(cluster_->replica_changes.back().peer_address, "inproc://r10");
  EXPECT_EQ(cluster_->replica_changes.back().client_address, "tcp://[::1]:7400");
  EXPECT_EQ(out_.str(),
            "replica 10 added as a learner; it becomes a voter by itself once it has caught up; voters now 1, 2, 3, "
            "learners 9, 10 (committed at index 2)\n");
}

TEST_F(CliTest, AdminReplicaRemove) {
  cluster_->status.commit_index = 57;
  ASSERT_EQ(Run({"admin", "replica", "remove", "2"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "replica 2 removed; voters now 1, 3 (committed at index 58)\n");
  ASSERT_EQ(cluster_->replica_changes.size(), 1u);
  EXPECT_EQ(cluster_->replica_changes[0].op, ReplicaOp::kRemove);
  EXPECT_EQ(cluster_->replica_changes[0].replica_id, 2u);
  EXPECT_EQ(cluster_->replica_changes[0].peer_address, "");
  EXPECT_EQ(cluster_->replica_changes[0].client_address, "");
  EXPECT_EQ(cluster_->voters, (std::vector<uint64_t>{1, 3}));
  EXPECT_FALSE(cluster_->replica_changes[0].force);
  ASSERT_EQ(Run({"admin", "replica", "remove", "3", "--force"}), kExitOk) << err_.str();
  EXPECT_TRUE(cluster_->replica_changes.back().force) << "--force reaches the coordinator";
  EXPECT_EQ(Run({"admin", "replica", "add", "5", "--peer-addr", "tcp://h:1", "--force"}), kExitUsage);
  EXPECT_NE(err_.str().find("--force only applies to 'admin replica remove'"), std::string::npos) << err_.str();
}

TEST_F(CliTest, AdminReplicaJson) {
  cluster_->status.commit_index = 10;
  ASSERT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr", "tcp://h4:7402", "--json"}), kExitOk) << err_.str();
  auto added = nlohmann::json::parse(out_.str());
  EXPECT_EQ(added["index"], 11);
  EXPECT_EQ(added["voters"], nlohmann::json::parse("[1,2,3]"));
  EXPECT_EQ(added["learners"], nlohmann::json::parse("[4]"));
  ASSERT_EQ(Run({"--json", "admin", "replica", "remove", "1"}), kExitOk) << err_.str();
  auto removed = nlohmann::json::parse(out_.str());
  EXPECT_EQ(removed["index"], 12);
  EXPECT_EQ(removed["voters"], nlohmann::json::parse("[2,3]"));
}

TEST_F(CliTest, AdminReplicaBadIdsAreUsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string id;
  };
  const std::vector<Case> cases = {
      {{"admin", "replica", "add", "abc", "--peer-addr", "tcp://h:1"}, "abc"},
      {{"admin", "replica", "add", "0", "--peer-addr", "tcp://h:1"}, "0"},
      {{"admin", "replica", "add", "-3", "--peer-addr", "tcp://h:1"}, "-3"},
      {{"admin", "replica", "remove", "1.5"}, "1.5"},
      {{"admin", "replica", "remove", "+4"}, "+4"},
      {{"admin", "replica", "remove", "0x10"}, "0x10"},
      {{"admin", "replica", "remove", "18446744073709551616"}, "18446744073709551616"},  // 2^64
      {{"admin", "replica", "remove", ""}, ""},
      {{"admin", "replica", "remove", "-1"}, "-1"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Run(c.args), kExitUsage) << c.id;
    EXPECT_EQ(err_.str(), "gpool: InvalidArgument: expected a replica ID (a positive integer), got '" + c.id + "'\n");
  }
  // The largest id is fine.
  ASSERT_EQ(Run({"admin", "replica", "remove", "18446744073709551615"}), kExitNotFound);
  EXPECT_EQ(cluster_->replica_changes.size(), 1u);
  EXPECT_EQ(cluster_->replica_changes[0].replica_id, UINT64_MAX);
  EXPECT_EQ(clients_made_, 1);
}

TEST_F(CliTest, AdminReplicaBadEndpointsAreUsageErrors) {
  for (const char* bad : {"h4:7402", "tcp://h4", "tcp://h4:", "tcp://:7402", "tcp://h4:0", "tcp://h4:65536",
                          "tcp://h4:x", "tcp://h4:-1", "udp://h4:7402", "ipc://", "inproc://", "tcp://h 4:7402",
                          "", "tcp://h4:7402\n"}) {
    EXPECT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr", bad}), kExitUsage) << bad;
    EXPECT_EQ(err_.str(), "gpool: InvalidArgument: --peer-addr: expected tcp://HOST:PORT, ipc://PATH or "
                          "inproc://NAME, got '" + std::string(bad) + "'\n");
  }
  EXPECT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr", "tcp://*:7402"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: --peer-addr: 'tcp://*:7402' is a bind address; give one that "
                        "others can connect to\n");
  EXPECT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr", "tcp://h4:7402", "--client-addr", "h4:7400"}),
            kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: --client-addr: expected tcp://HOST:PORT, ipc://PATH or "
                        "inproc://NAME, got 'h4:7400'\n");
  EXPECT_TRUE(cluster_->replica_changes.empty());
  EXPECT_EQ(clients_made_, 0);
  // The edges of the port range are fine.
  EXPECT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr", "tcp://h4:1"}), kExitOk) << err_.str();
  EXPECT_EQ(Run({"admin", "replica", "add", "5", "--peer-addr", "tcp://h5:65535"}), kExitOk) << err_.str();
}

TEST_F(CliTest, AdminReplicaAddRequiresPeerAddr) {
  EXPECT_EQ(Run({"admin", "replica", "add", "4"}), kExitUsage);
  EXPECT_EQ(err_.str(),
            "gpool: InvalidArgument: admin replica add: --peer-addr is required (usage: gpool admin replica add ID "
            "--peer-addr ENDPOINT [--client-addr ENDPOINT] [--worker-addr ENDPOINT])\nRun 'gpool --help' for usage.\n");
  EXPECT_EQ(Run({"admin", "replica", "add", "4", "--client-addr", "tcp://h4:7400"}), kExitUsage);
  EXPECT_NE(err_.str().find("--peer-addr is required"), std::string::npos) << err_.str();
  EXPECT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr"}), kExitUsage);  // flag without its value
  EXPECT_TRUE(cluster_->replica_changes.empty());
  EXPECT_EQ(clients_made_, 0);
}

TEST_F(CliTest, AdminReplicaUsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"admin"}, "admin: expected a subcommand: replica, user, role, bootstrap, keygen, node, join-token or snapshot"},
      {{"admin", "replicas"}, "admin: unknown subcommand 'replicas'; expected replica, user, role, bootstrap, keygen, node, join-token or snapshot"},
      {{"admin", "replica"}, "admin replica: expected add, remove, rotate-key or list"},
      {{"admin", "replica", "delete", "4"}, "admin replica: unknown subcommand 'delete'; expected add, remove, rotate-key or list"},
      {{"admin", "replica", "add", "--peer-addr", "tcp://h:1"},
       "usage: gpool admin replica add ID --peer-addr ENDPOINT [--client-addr ENDPOINT] [--worker-addr ENDPOINT]"},
      {{"admin", "replica", "remove"}, "usage: gpool admin replica remove ID [--force]"},
      {{"admin", "replica", "list", "4"}, "usage: gpool admin replica list"},
      {{"admin", "replica", "remove", "4", "--peer-addr", "tcp://h:1"},
       "--peer-addr only applies to 'admin replica add'"},
      {{"admin", "replica", "list", "--client-addr", "tcp://h:1"}, "--client-addr only applies to 'admin replica add'"},
      {{"admin", "replica", "remove", "4", "5", "6"}, "usage: gpool admin replica|user|role|bootstrap|keygen|node|join-token|snapshot ..."},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Run(c.args), kExitUsage) << c.message;
    EXPECT_EQ(err_.str(), "gpool: InvalidArgument: " + c.message + "\nRun 'gpool --help' for usage.\n");
  }
  EXPECT_EQ(Run({"admin", "replica", "list", "--bogus"}), kExitUsage);
  EXPECT_EQ(err_.str().rfind("gpool: InvalidArgument: admin: ", 0), 0u) << err_.str();
  EXPECT_TRUE(cluster_->replica_changes.empty());
  EXPECT_EQ(clients_made_, 0);
}

TEST_F(CliTest, AdminReplicaCoordinatorErrorsMapToExitCodes) {
  EXPECT_EQ(Run({"admin", "replica", "add", "3", "--peer-addr", "tcp://h3:7402"}), kExitError);
  EXPECT_EQ(err_.str(), "gpool: AlreadyExists: replica 3 is already a voter\n");
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(Run({"admin", "replica", "remove", "7"}), kExitNotFound);
  EXPECT_EQ(err_.str(), "gpool: NotFound: replica 7 is neither a voter nor a learner\n");
  cluster_->fail_next = Status::Unavailable("coordinator at tcp://x:1 did not answer within 5 ms");
  EXPECT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr", "tcp://h4:7402"}), kExitUnavailable);
  EXPECT_EQ(err_.str(), "gpool: Unavailable: coordinator at tcp://x:1 did not answer within 5 ms\n");
  cluster_->fail_next = Status::NotLeader("no leader");
  EXPECT_EQ(Run({"admin", "replica", "remove", "1"}), kExitUnavailable);
  cluster_->fail_next = Status::InvalidArgument("replica_id: must be positive");
  EXPECT_EQ(Run({"admin", "replica", "remove", "1"}), kExitUsage);
  cluster_->fail_next = Status::FailedPrecondition("a configuration change is already in progress");
  EXPECT_EQ(Run({"admin", "replica", "remove", "1", "--json"}), kExitError);
  EXPECT_EQ(err_.str(), "gpool: FailedPrecondition: a configuration change is already in progress\n");
  EXPECT_EQ(out_.str(), "");
  cluster_->fail_next = Status::Unauthenticated("bad token");
  EXPECT_EQ(Run({"admin", "replica", "list"}), kExitError);
  EXPECT_EQ(err_.str(), "gpool: Unauthenticated: bad token\n");
  // None of the failed changes touched the voters.
  EXPECT_EQ(cluster_->voters, (std::vector<uint64_t>{1, 2, 3}));
}

TEST_F(CliTest, AdminReplicaListShowsTheReplicaTable) {
  cluster_->status.replica_id = "1";
  cluster_->status.role = "leader";
  cluster_->status.commit_index = 120;
  // Replica 3 still runs an older binary mid-upgrade; 2 sent none yet.
  cluster_->status.replicas = {ReplicaInfo{"1", "tcp://10.0.0.1:7400", "leader", 121, -1, 2},
                               ReplicaInfo{"2", "tcp://10.0.0.2:7400", "follower", 117, 300, 0},
                               ReplicaInfo{"3", "", "follower", 0, 4'200, 1}};
  ASSERT_EQ(Run({"admin", "replica", "list"}), kExitOk) << err_.str();
  const std::string table =
      "REPLICA  ADDRESS              ROLE      MATCH  LAG  HEARD     VERSION\n"
      "1        tcp://10.0.0.1:7400  leader    121    0    -         2\n"
      "2        tcp://10.0.0.2:7400  follower  117    3    0.3s ago  -\n"
      "3        -                    follower  0      -    4.2s ago  1\n";
  EXPECT_EQ(out_.str(), table);
  EXPECT_TRUE(cluster_->replica_changes.empty());
  // The same table ends `gpool status`.
  ASSERT_EQ(Run({"status"}), kExitOk);
  EXPECT_EQ(out_.str().substr(out_.str().size() - table.size()), table);

  ASSERT_EQ(Run({"admin", "replica", "list", "--json"}), kExitOk);
  auto json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["commit_index"], 120);
  ASSERT_EQ(json["replicas"].size(), 3u);
  EXPECT_EQ(json["replicas"][1]["id"], "2");
  EXPECT_EQ(json["replicas"][1]["match_index"], 117);

  cluster_->status.replicas.clear();
  ASSERT_EQ(Run({"admin", "replica", "list"}), kExitOk);
  EXPECT_EQ(out_.str(), "No replicas.\n");
}

TEST_F(CliTest, AdminHelp) {
  ASSERT_EQ(Run({"help", "admin"}), kExitOk);
  const std::string help = out_.str();
  EXPECT_NE(help.find("  gpool admin replica add ID --peer-addr ENDPOINT [--client-addr ENDPOINT] [--worker-addr ENDPOINT]\n"),
            std::string::npos)
      << help;
  EXPECT_NE(help.find("  gpool admin replica remove ID [--force]\n"), std::string::npos) << help;
  EXPECT_NE(help.find("  gpool admin replica list\n"), std::string::npos) << help;
  EXPECT_NE(help.find("--client-addr ENDPOINT"), std::string::npos) << help;
  ASSERT_EQ(Run({"admin", "replica", "add", "--help"}), kExitOk);
  EXPECT_EQ(out_.str(), help);
  ASSERT_EQ(Run({"--help"}), kExitOk);
  EXPECT_NE(out_.str().find("\n  admin replica add ID --peer-addr ENDPOINT  "), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("\n  admin replica remove ID  "), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("\n  admin replica list  "), std::string::npos) << out_.str();
  EXPECT_EQ(clients_made_, 0);
}

}  // namespace
}  // namespace gpool
