// `gpool nodes` and `gpool node show|cordon|uncordon|label|pool|taint`
// (cli_nodes.cc).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "client/cli.h"
#include "client/cli_test_fixture.h"
#include "client/format.h"
#include "client/testing/fake_client.h"
#include "protocol/messages_nodes.h"
#include "protocol/model/node_update.h"

namespace gpool {
namespace {

using client::testing::CliTest;

// --- node cordon|uncordon|label|pool ---------------------------------------------------

class NodeCliTest : public CliTest {
 protected:
  NodeCliTest() {
    NodeSummary a;
    a.name = "node-0";
    a.state = "Ready";
    a.pool = "public";
    a.labels = {{"rack", "r1"}, {"old", "x"}};
    NodeSummary b;
    b.name = "node-1";
    b.state = "NotReady";
    b.pool = "public";
    cluster_->nodes.nodes = {a, b};
  }

  const NodeSummary& Node(size_t i) const { return cluster_->nodes.nodes.at(i); }

  // Runs `args`, expecting a usage error with exactly `message` and no request sent.
  void ExpectRejected(const std::vector<std::string>& args, const std::string& message, bool usage_hint) {
    SCOPED_TRACE(::testing::PrintToString(args));
    EXPECT_EQ(Run(args), kExitUsage);
    EXPECT_EQ(err_.str(), "gpool: InvalidArgument: " + message + "\n" +
                              (usage_hint ? "Run 'gpool --help' for usage.\n" : ""));
    EXPECT_EQ(out_.str(), "");
    EXPECT_TRUE(cluster_->node_updates.empty());
    EXPECT_EQ(clients_made_, 0);
  }
};

TEST_F(NodeCliTest, CordonAndUncordon) {
  ASSERT_EQ(Run({"node", "cordon", "node-0"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 cordoned\n");
  EXPECT_EQ(err_.str(), "");
  ASSERT_EQ(cluster_->node_updates.size(), 1u);
  EXPECT_EQ(cluster_->node_updates[0].node, "node-0");
  EXPECT_EQ(cluster_->node_updates[0].op, NodeUpdateOp::kCordon);
  EXPECT_TRUE(cluster_->node_updates[0].labels.empty());
  EXPECT_TRUE(cluster_->node_updates[0].remove_labels.empty());
  EXPECT_EQ(cluster_->node_updates[0].pool, "");
  EXPECT_TRUE(Node(0).cordoned);
  EXPECT_FALSE(Node(1).cordoned);

  // `nodes` shows the state the coordinator reports.
  ASSERT_EQ(Run({"nodes"}), kExitOk);
  EXPECT_NE(out_.str().find("\nnode-0  Ready,Cordoned  ok      public  "), std::string::npos) << out_.str();

  // Cordoning again is harmless.
  ASSERT_EQ(Run({"node", "cordon", "node-0"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 cordoned\n");
  EXPECT_EQ(Node(0).state, "Ready,Cordoned");

  ASSERT_EQ(Run({"node", "uncordon", "node-0"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 uncordoned\n");
  EXPECT_EQ(cluster_->node_updates.back().op, NodeUpdateOp::kUncordon);
  EXPECT_FALSE(Node(0).cordoned);
  EXPECT_EQ(Node(0).state, "Ready");

  // A node that is not ready can be cordoned too.
  ASSERT_EQ(Run({"node", "cordon", "node-1"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-1 cordoned\n");
  EXPECT_EQ(Node(1).state, "NotReady,Cordoned");
}

TEST_F(NodeCliTest, AnExclusiveNodeMayBelongToAQueue) {
  ASSERT_EQ(Run({"node", "pool", "node-0", "exclusive", "--queue", "vision"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 moved to pool exclusive (owned by queue vision)\n");
  EXPECT_EQ(cluster_->node_updates.back().queue, "vision");
  ASSERT_EQ(Run({"nodes"}), kExitOk);
  EXPECT_NE(out_.str().find("\nnode-0  Ready     ok      exclusive:vision  "), std::string::npos) << out_.str();
  ASSERT_EQ(Run({"node", "show", "node-0"}), kExitOk);
  EXPECT_NE(out_.str().find("Pool:       exclusive (owned by queue vision)\n"), std::string::npos) << out_.str();
  cluster_->node_updates.clear();
  clients_made_ = 0;
  ExpectRejected({"node", "pool", "node-0", "public", "--queue", "vision"},
                 "pool: only an exclusive node belongs to a queue (queue 'vision' given for pool 'public')", false);
  ExpectRejected({"node", "cordon", "node-0", "--queue", "vision"},
                 "node cordon: --queue belongs to 'node pool NAME exclusive --queue Q' (usage: gpool node cordon NAME)",
                 true);
}

TEST_F(NodeCliTest, LabelSetsAndRemovesAndPrintsAllLabelsSorted) {
  ASSERT_EQ(Run({"node", "label", "node-0", "team=vision", "old-", "zone="}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 labels: rack=r1, team=vision, zone=\n");
  EXPECT_EQ(err_.str(), "");
  ASSERT_EQ(cluster_->node_updates.size(), 1u);
  const UpdateNode& request = cluster_->node_updates[0];
  EXPECT_EQ(request.node, "node-0");
  EXPECT_EQ(request.op, NodeUpdateOp::kLabel);
  EXPECT_EQ(request.labels, (std::map<std::string, std::string>{{"team", "vision"}, {"zone", ""}}));
  EXPECT_EQ(request.remove_labels, (std::vector<std::string>{"old"}));
  EXPECT_EQ(request.pool, "");
  EXPECT_EQ(Node(0).labels,
            (std::map<std::string, std::string>{{"rack", "r1"}, {"team", "vision"}, {"zone", ""}}));

  // Overwriting a value; a key given twice with the same value is fine; so is removing twice.
  ASSERT_EQ(Run({"node", "label", "node-0", "team=nlp", "team=nlp", "zone-", "zone-"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 labels: rack=r1, team=nlp\n");
  EXPECT_EQ(cluster_->node_updates.back().labels, (std::map<std::string, std::string>{{"team", "nlp"}}));
  EXPECT_EQ(cluster_->node_updates.back().remove_labels, (std::vector<std::string>{"zone"}));

  // Every character the rules allow, at the longest lengths.
  const std::string key = "example.com/gpu_type-" + std::string(42, 'k');
  const std::string value = "A100_80GB.sxm-" + std::string(49, 'v');
  ASSERT_EQ(key.size(), 63u);
  ASSERT_EQ(value.size(), 63u);
  ASSERT_EQ(Run({"node", "label", "node-0", key + "=" + value}), kExitOk) << err_.str();
  EXPECT_EQ(Node(0).labels.at(key), value);

  // Removing everything.
  ASSERT_EQ(Run({"node", "label", "node-0", "rack-", "team-", key + "-"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 labels: none\n");
  EXPECT_TRUE(Node(0).labels.empty());

  // Removing a label the node does not have is not an error (as on the coordinator).
  ASSERT_EQ(Run({"node", "label", "node-0", "nothere-"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 labels: none\n");
}

TEST_F(NodeCliTest, RemovingALabelFromTheNodesOwnSpecPrintsANote) {
  cluster_->spec_labels["node-0"] = {{"rack", "r1"}};
  cluster_->nodes.nodes[0].labels["rack"] = "r9";  // an operator override of the spec's r1
  ASSERT_EQ(Run({"node", "label", "node-0", "rack-", "old-"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 labels: rack=r1\n");
  EXPECT_EQ(err_.str(), "gpool: note: rack is still rack=r1: it comes from node node-0's own labels, which "
                        "'node label' can override but not remove\n");
}

TEST_F(NodeCliTest, Pool) {
  for (const char* pool : {"exclusive", "pooled", "public"}) {
    ASSERT_EQ(Run({"node", "pool", "node-1", pool}), kExitOk) << err_.str();
    EXPECT_EQ(out_.str(), std::string("node node-1 moved to pool ") + pool + "\n");
    EXPECT_EQ(cluster_->node_updates.back().op, NodeUpdateOp::kPool);
    EXPECT_EQ(cluster_->node_updates.back().pool, pool);
    EXPECT_EQ(Node(1).pool, pool);
  }
  EXPECT_EQ(cluster_->node_updates.size(), 3u);
  EXPECT_EQ(Node(0).pool, "public");
}

TEST_F(NodeCliTest, JsonPrintsTheReply) {
  ASSERT_EQ(Run({"node", "cordon", "node-0", "--json"}), kExitOk) << err_.str();
  auto cordoned = nlohmann::json::parse(out_.str());
  EXPECT_EQ(cordoned["node"]["name"], "node-0");
  EXPECT_EQ(cordoned["node"]["cordoned"], true);
  EXPECT_EQ(cordoned["node"]["state"], "Ready,Cordoned");

  ASSERT_EQ(Run({"--json", "node", "uncordon", "node-0"}), kExitOk) << err_.str();
  EXPECT_EQ(nlohmann::json::parse(out_.str())["node"]["cordoned"], false);

  ASSERT_EQ(Run({"node", "label", "--json", "node-0", "team=vision", "old-"}), kExitOk) << err_.str();
  auto labelled = nlohmann::json::parse(out_.str());
  EXPECT_EQ(labelled["node"]["labels"], nlohmann::json::parse(R"({"rack":"r1","team":"vision"})"));

  ASSERT_EQ(Run({"node", "pool", "node-0", "pooled", "--json"}), kExitOk) << err_.str();
  auto pooled = nlohmann::json::parse(out_.str());
  EXPECT_EQ(pooled["node"]["pool"], "pooled");
  EXPECT_EQ(pooled.size(), 1u);  // {"node": {...}}, the UpdateNodeReply as is
}

TEST_F(NodeCliTest, UnknownNodeIsNotFound) {
  const std::vector<std::vector<std::string>> cases = {
      {"node", "cordon", "node-9"},
      {"node", "uncordon", "node-9"},
      {"node", "label", "node-9", "team=vision"},
      {"node", "pool", "node-9", "exclusive"},
      {"node", "pool", "node-9", "exclusive", "--json"},
  };
  for (const auto& args : cases) {
    EXPECT_EQ(Run(args), kExitNotFound) << args[1];
    EXPECT_EQ(err_.str(), "gpool: NotFound: node node-9 is not registered\n");
    EXPECT_EQ(out_.str(), "");
  }
  EXPECT_EQ(cluster_->node_updates.size(), cases.size());
  EXPECT_FALSE(Node(0).cordoned);
}

TEST_F(NodeCliTest, CoordinatorErrorsMapToExitCodes) {
  cluster_->fail_next = Status::Unavailable("coordinator at tcp://x:1 did not answer within 5 ms");
  EXPECT_EQ(Run({"node", "cordon", "node-0"}), kExitUnavailable);
  EXPECT_EQ(err_.str(), "gpool: Unavailable: coordinator at tcp://x:1 did not answer within 5 ms\n");
  cluster_->fail_next = Status::InvalidArgument("labels: more than 256 changes at once");
  EXPECT_EQ(Run({"node", "label", "node-0", "a=1"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: labels: more than 256 changes at once\n");
  cluster_->fail_next = Status::NotLeader("no leader");
  EXPECT_EQ(Run({"node", "pool", "node-0", "pooled"}), kExitUnavailable);
  cluster_->fail_next = Status::Unauthenticated("bad token");
  EXPECT_EQ(Run({"node", "uncordon", "node-0"}), kExitError);
  EXPECT_EQ(out_.str(), "");
  EXPECT_FALSE(Node(0).cordoned);
  EXPECT_EQ(Node(0).pool, "public");
}

TEST_F(NodeCliTest, GlobalFlagsMayComeAnywhere) {
  ASSERT_EQ(Run({"node", "label", "-c", "tcp://h:1", "node-0", "--token=a=b-", "team=vision"}), kExitOk)
      << err_.str();
  EXPECT_EQ(options_.endpoints, "tcp://h:1");
  EXPECT_EQ(options_.token, "a=b-");
  EXPECT_EQ(cluster_->node_updates.back().labels, (std::map<std::string, std::string>{{"team", "vision"}}));
  ASSERT_EQ(Run({"--coordinator=tcp://h:2", "node", "cordon", "node-1", "--timeout-ms", "100"}), kExitOk)
      << err_.str();
  EXPECT_EQ(options_.endpoints, "tcp://h:2");
  EXPECT_EQ(options_.timeout_ms, 100);
}

TEST_F(NodeCliTest, UsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"node"}, "node: expected a subcommand: show, cordon, uncordon, label, pool, taint, pending, approve or reject"},
      {{"node", "drain", "node-0"},
       "node: unknown subcommand 'drain'; expected show, cordon, uncordon, label, pool, taint, pending, approve or reject"},
      {{"node", "show"}, "node show: missing the node NAME (usage: gpool node show NAME)"},
      {{"node", "show", "node-0", "node-1"},
       "node show: expected one node NAME, got 2 arguments (usage: gpool node show NAME)"},
      {{"node", "cordon"}, "node cordon: missing the node NAME (usage: gpool node cordon NAME)"},
      {{"node", "uncordon"}, "node uncordon: missing the node NAME (usage: gpool node uncordon NAME)"},
      {{"node", "label"}, "node label: missing the node NAME (usage: gpool node label NAME KEY=VALUE... KEY-...)"},
      {{"node", "pool"}, "node pool: missing the node NAME (usage: gpool node pool NAME public|pooled|exclusive [--queue Q])"},
      {{"node", "cordon", "node-0", "node-1"},
       "node cordon: expected one node NAME, got 2 arguments (usage: gpool node cordon NAME)"},
      {{"node", "uncordon", "node-0", "x"},
       "node uncordon: expected one node NAME, got 2 arguments (usage: gpool node uncordon NAME)"},
      {{"node", "label", "node-0"},
       "node label: expected at least one KEY=VALUE (set) or KEY- (remove) (usage: gpool node label NAME "
       "KEY=VALUE... KEY-...)"},
      {{"node", "pool", "node-0"},
       "node pool: expected a node NAME and a POOL (usage: gpool node pool NAME public|pooled|exclusive [--queue Q])"},
      {{"node", "pool", "node-0", "public", "pooled"},
       "node pool: expected a node NAME and a POOL (usage: gpool node pool NAME public|pooled|exclusive [--queue Q])"},
  };
  for (const auto& c : cases) ExpectRejected(c.args, c.message, /*usage_hint=*/true);
  EXPECT_EQ(Run({"node", "cordon", "node-0", "--bogus"}), kExitUsage);
  EXPECT_EQ(err_.str().rfind("gpool: InvalidArgument: node: ", 0), 0u) << err_.str();
  EXPECT_TRUE(cluster_->node_updates.empty());
}

// --- nodes --devices, node show ----------------------------------------------------------

class NodeDevicesCliTest : public CliTest {
 protected:
  NodeDevicesCliTest() {
    // node-0: 8 GPUs in two NVLink groups (0-3 and 4-7), one NUMA node each.
    NodeSummary a;
    a.name = "node-0";
    a.state = "Ready";
    a.pool = "public";
    a.gpus_total = 8;
    a.gpus_used = 1;
    a.cpu_milli_total = 64000;
    a.memory_mib_total = 512 * 1024;
    a.labels = {{"rack", "r1"}};
    for (uint32_t i = 0; i < 8; ++i) {
      DeviceSummary d;
      d.index = i;
      d.uuid = "GPU-" + std::to_string(i) + "0000000-aaaa-bbbb-cccc-dddddddddddd";
      d.model = "A100";
      d.memory_mib = 40 * 1024;
      d.numa = i < 4 ? 0 : 1;
      // Each GPU reports only its next neighbour in its group: the group is still all four.
      if (i % 4 != 3) d.nvlink_peers = {i + 1};
      a.devices.push_back(d);
    }
    a.devices[2].task = "7.1";
    const auto groups = LinkGroups(a.devices);
    for (size_t i = 0; i < groups.size(); ++i) a.devices[i].link_group = groups[i];
    a.numa = {NumaSummary{0, 32000, 256 * 1024, {0, 1, 2, 3}}, NumaSummary{1, 32000, 256 * 1024, {4, 5, 6, 7}}};
    // node-1: two PCIe GPUs, no links, no NUMA information.
    NodeSummary b;
    b.name = "node-1";
    b.state = "Ready";
    b.pool = "pooled";
    b.gpus_total = 2;
    for (uint32_t i = 0; i < 2; ++i) {
      DeviceSummary d;
      d.index = i;
      d.uuid = "GPU-b" + std::to_string(i);
      d.model = "T4";
      d.memory_mib = 16 * 1024;
      b.devices.push_back(d);
    }
    cluster_->nodes.nodes = {a, b};
  }
};

TEST_F(NodeDevicesCliTest, NodesListsDevicesOnlyWhenAsked) {
  ASSERT_EQ(Run({"nodes"}), kExitOk) << err_.str();
  const std::string plain = out_.str();
  EXPECT_EQ(plain.find("Node node-0:"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("INDEX"), std::string::npos) << plain;

  ASSERT_EQ(Run({"nodes", "--devices"}), kExitOk) << err_.str();
  const std::string text = out_.str();
  EXPECT_EQ(text.rfind(plain, 0), 0u) << text;  // the nodes table first, unchanged
  EXPECT_EQ(text.substr(plain.size()),
            "\n"
            "Node node-0:\n"
            "  INDEX  UUID             MODEL  MEM(GiB)  NUMA  LINK GROUP  HEALTH  SHARING  TASK\n"
            "  0      GPU-00000000...  A100   40        0     0           ok      -        -\n"
            "  1      GPU-10000000...  A100   40        0     0           ok      -        -\n"
            "  2      GPU-20000000...  A100   40        0     0           ok      -        7.1\n"
            "  3      GPU-30000000...  A100   40        0     0           ok      -        -\n"
            "  4      GPU-40000000...  A100   40        1     1           ok      -        -\n"
            "  5      GPU-50000000...  A100   40        1     1           ok      -        -\n"
            "  6      GPU-60000000...  A100   40        1     1           ok      -        -\n"
            "  7      GPU-70000000...  A100   40        1     1           ok      -        -\n"
            "\n"
            "Node node-1:\n"
            "  INDEX  UUID    MODEL  MEM(GiB)  NUMA  LINK GROUP  HEALTH  SHARING  TASK\n"
            "  0      GPU-b0  T4     16        -     -           ok      -        -\n"
            "  1      GPU-b1  T4     16        -     -           ok      -        -\n");
  EXPECT_EQ(err_.str(), "");

  // --json is the reply as it came; devices only when asked for.
  ASSERT_EQ(Run({"nodes", "--json"}), kExitOk);
  EXPECT_EQ(nlohmann::json::parse(out_.str())["nodes"][0].count("devices") == 0 ||
                nlohmann::json::parse(out_.str())["nodes"][0]["devices"].empty(),
            true)
      << out_.str();
  ASSERT_EQ(Run({"nodes", "--devices", "--json"}), kExitOk);
  const std::string json = out_.str();
  auto parsed = nlohmann::json::parse(json);
  EXPECT_EQ(parsed["nodes"][0]["devices"][6]["link_group"], 1);
  EXPECT_EQ(parsed["nodes"][1]["devices"][0]["link_group"], -1);
}

TEST_F(NodeDevicesCliTest, ShowNodeWithTwoLinkGroups) {
  ASSERT_EQ(Run({"node", "show", "node-0"}), kExitOk) << err_.str();
  const std::string text = out_.str();
  EXPECT_EQ(text.rfind("Node node-0\n  State:      Ready\n", 0), 0u) << text;
  EXPECT_NE(text.find("  Labels:     rack=r1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  GPUs:       1/8 used\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nNUMA nodes:\n"
                      "  ID  CPUS  MEM(GiB)  GPUS\n"
                      "  0   32    256       0-3\n"
                      "  1   32    256       4-7\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  2      GPU-20000000-aaaa-bbbb-cccc-dddddddddddd  A100   40        0     0           ok      -        7.1\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.substr(text.find("\nNVLink groups:")),
            "\nNVLink groups:\n  group 0: GPUs 0-3 (NVLink)\n  group 1: GPUs 4-7 (NVLink)\n");
  EXPECT_EQ(err_.str(), "");
  EXPECT_TRUE(cluster_->node_updates.empty());  // showing changes nothing
}

TEST_F(NodeDevicesCliTest, ShowNodeWithoutLinks) {
  ASSERT_EQ(Run({"node", "show", "node-1"}), kExitOk) << err_.str();
  const std::string text = out_.str();
  EXPECT_NE(text.find("\nNUMA nodes: none reported\n"), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.find("\nNVLink groups:")), "\nNVLink groups:\n  no NVLink: GPUs 0-1\n");
}

TEST_F(NodeDevicesCliTest, ShowNodeAsJson) {
  ASSERT_EQ(Run({"node", "show", "node-0", "--json"}), kExitOk) << err_.str();
  auto json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["name"], "node-0");
  ASSERT_EQ(json["devices"].size(), 8u);
  EXPECT_EQ(json["devices"][2]["task"], "7.1");
  EXPECT_EQ(json["devices"][3]["link_group"], 0);
  EXPECT_EQ(json["devices"][4]["link_group"], 1);
  EXPECT_EQ(json["numa"][0]["gpus"], (nlohmann::json{0, 1, 2, 3}));
  // Global flags go before the command too.
  ASSERT_EQ(Run({"--json", "node", "show", "node-1"}), kExitOk) << err_.str();
  EXPECT_EQ(nlohmann::json::parse(out_.str())["name"], "node-1");
}

TEST_F(NodeDevicesCliTest, ShowUnknownNodeIsNotFound) {
  EXPECT_EQ(Run({"node", "show", "node-9"}), kExitNotFound);
  EXPECT_EQ(err_.str(), "gpool: NotFound: node node-9 is not registered\n");
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(Run({"node", "show", "node-9", "--json"}), kExitNotFound);
  EXPECT_EQ(out_.str(), "");

  cluster_->fail_next = Status::Unavailable("coordinator at tcp://x:1 did not answer within 5 ms");
  EXPECT_EQ(Run({"node", "show", "node-0"}), kExitUnavailable);
  EXPECT_EQ(out_.str(), "");
}

TEST_F(NodeDevicesCliTest, HelpNamesTheNewForms) {
  ASSERT_EQ(Run({"--help"}), kExitOk);
  EXPECT_NE(out_.str().find("  nodes [--devices]  "), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("  node show NAME  "), std::string::npos) << out_.str();
  ASSERT_EQ(Run({"help", "nodes"}), kExitOk);
  EXPECT_NE(out_.str().find("--devices"), std::string::npos) << out_.str();
}

TEST_F(NodeCliTest, BadLabelsAndPoolsAreRejectedBeforeSending) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::string long_key(64, 'k');
  const std::string long_value(64, 'v');
  const std::vector<Case> cases = {
      {{"team"}, "node label: 'team' is neither KEY=VALUE (set a label) nor KEY- (remove one)"},
      {{"a=1", "team"}, "node label: 'team' is neither KEY=VALUE (set a label) nor KEY- (remove one)"},
      {{""}, "node label: '' is neither KEY=VALUE (set a label) nor KEY- (remove one)"},
      {{"=vision"}, "node label: '=vision': the label key is empty"},
      {{"="}, "node label: '=': the label key is empty"},
      {{"-"}, "node label: '-': the label key is empty"},
      {{long_key + "=v"}, "node label: label key '" + long_key + "' is longer than 63 characters"},
      {{long_key + "-"}, "node label: label key '" + long_key + "' is longer than 63 characters"},
      {{"te am=x"}, "node label: label key 'te am' may only contain letters, digits, '.', '_', '/' and '-'"},
      {{"team:x=1"}, "node label: label key 'team:x' may only contain letters, digits, '.', '_', '/' and '-'"},
      {{"t\xc3\xa9" "am=1"},
       "node label: label key 't\xc3\xa9" "am' may only contain letters, digits, '.', '_', '/' and '-'"},
      {{"te*m-"}, "node label: label key 'te*m' may only contain letters, digits, '.', '_', '/' and '-'"},
      {{"team=" + long_value}, "node label: the value of team is longer than 63 characters"},
      {{"team=a/b"}, "node label: the value of team ('a/b') may only contain letters, digits, '.', '_' and '-'"},
      {{"team=a b"}, "node label: the value of team ('a b') may only contain letters, digits, '.', '_' and '-'"},
      {{"team=a=b"}, "node label: the value of team ('a=b') may only contain letters, digits, '.', '_' and '-'"},
      {{"team=vision", "team-"}, "node label: team is both set and removed"},
      {{"team-", "team=vision"}, "node label: team is both set and removed"},
      {{"team=vision", "team=nlp"}, "node label: team is set twice ('vision' and 'nlp')"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"node", "label", "node-0"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    ExpectRejected(args, c.message, /*usage_hint=*/false);
  }
  ExpectRejected({"node", "label", "node-0", "-x=1"},
                 "node: '-x=1' is not a flag, and a label key cannot start with '-'", false);
  ExpectRejected({"node", "label", "node-0", "--team-"},
                 "node: '--team-' is not a flag, and a label key cannot start with '-'", false);
  ExpectRejected({"node", "pool", "node-0", "shared"},
                 "node pool: unknown pool 'shared'; expected public, pooled or exclusive", false);
  ExpectRejected({"node", "pool", "node-0", "Public"},
                 "node pool: unknown pool 'Public'; expected public, pooled or exclusive", false);
  ExpectRejected({"node", "pool", "node-0", ""}, "node pool: unknown pool ''; expected public, pooled or exclusive",
                 false);
  // The node name follows the coordinator's rules (protocol/validate.h).
  ExpectRejected({"node", "cordon", ""}, "node: must not be empty", false);
  ExpectRejected({"node", "cordon", "node/0"}, "node: 'node/0' may only contain letters, digits, '-', '_' and '.'",
                 false);
  EXPECT_EQ(Node(0).labels, (std::map<std::string, std::string>{{"rack", "r1"}, {"old", "x"}}));
}

TEST_F(NodeCliTest, TaintSetsAndRemovesAndPrintsAllTaintsSorted) {
  ASSERT_EQ(Run({"node", "taint", "node-0", "maint=", "dedicated=ml"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 taints: dedicated=ml, maint=\n");
  EXPECT_EQ(err_.str(), "");
  ASSERT_EQ(cluster_->node_updates.size(), 1u);
  const UpdateNode& request = cluster_->node_updates[0];
  EXPECT_EQ(request.node, "node-0");
  EXPECT_EQ(request.op, NodeUpdateOp::kTaint);
  EXPECT_EQ(request.taints, (std::map<std::string, std::string>{{"dedicated", "ml"}, {"maint", ""}}));
  EXPECT_TRUE(request.remove_taints.empty());
  EXPECT_TRUE(request.labels.empty());
  EXPECT_TRUE(request.remove_labels.empty());
  EXPECT_EQ(Node(0).labels, (std::map<std::string, std::string>{{"rack", "r1"}, {"old", "x"}}));  // untouched

  // `nodes` shows them in their own column.
  ASSERT_EQ(Run({"nodes"}), kExitOk);
  EXPECT_NE(out_.str().find("  dedicated=ml,maint=  old=x,rack=r1\n"), std::string::npos) << out_.str();

  ASSERT_EQ(Run({"node", "taint", "node-0", "maint-", "dedicated=gpu", "nothere-"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 taints: dedicated=gpu\n");
  EXPECT_EQ(cluster_->node_updates.back().remove_taints, (std::vector<std::string>{"maint", "nothere"}));

  ASSERT_EQ(Run({"node", "taint", "node-0", "dedicated-", "--json"}), kExitOk) << err_.str();
  auto json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["node"]["name"], "node-0");
  EXPECT_TRUE(!json["node"].contains("taints") || json["node"]["taints"].empty()) << out_.str();
  ASSERT_EQ(Run({"node", "taint", "node-0", "x-"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 taints: none\n");
  EXPECT_TRUE(Node(0).taints.empty());

  EXPECT_EQ(Run({"node", "taint", "node-9", "maint="}), kExitNotFound);
  EXPECT_EQ(err_.str(), "gpool: NotFound: node node-9 is not registered\n");
}

TEST_F(NodeCliTest, BadTaintsAreRejectedBeforeSending) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"maint"}, "node taint: 'maint' is neither KEY=VALUE (set a taint) nor KEY- (remove one)"},
      {{"=ml"}, "node taint: '=ml': the taint key is empty"},
      {{"a b=1"}, "node taint: taint key 'a b' may only contain letters, digits, '.', '_', '/' and '-'"},
      {{"k=a/b"}, "node taint: the value of k ('a/b') may only contain letters, digits, '.', '_' and '-'"},
      {{"k=1", "k-"}, "node taint: k is both set and removed"},
      {{"k=1", "k=2"}, "node taint: k is set twice ('1' and '2')"},
  };
  for (const auto& [taints, message] : cases) {
    std::vector<std::string> args = {"node", "taint", "node-0"};
    args.insert(args.end(), taints.begin(), taints.end());
    ExpectRejected(args, message, /*usage_hint=*/false);
  }
  ExpectRejected({"node", "taint", "node-0", "-k=1"},
                 "node: '-k=1' is not a flag, and a label key cannot start with '-'", false);
  ExpectRejected({"node", "taint"},
                 "node taint: missing the node NAME (usage: gpool node taint NAME KEY=VALUE... KEY-...)", true);
  ExpectRejected({"node", "taint", "node-0"},
                 "node taint: expected at least one KEY=VALUE (set) or KEY- (remove) (usage: gpool node taint NAME "
                 "KEY=VALUE... KEY-...)",
                 true);
  EXPECT_TRUE(Node(0).taints.empty());
}

TEST_F(NodeCliTest, Help) {
  ASSERT_EQ(Run({"help", "node"}), kExitOk);
  const std::string help = out_.str();
  for (const char* form : {"  gpool node cordon NAME\n", "  gpool node uncordon NAME\n",
                           "  gpool node label NAME KEY=VALUE... KEY-...\n",
                           "  gpool node pool NAME public|pooled|exclusive [--queue Q]\n",
                           "  gpool node taint NAME KEY=VALUE... KEY-...\n"}) {
    EXPECT_NE(help.find(form), std::string::npos) << form << help;
  }
  ASSERT_EQ(Run({"node", "label", "--help"}), kExitOk);
  EXPECT_EQ(out_.str(), help);
  ASSERT_EQ(Run({"--help"}), kExitOk);
  for (const char* line : {"\n  node cordon NAME  ", "\n  node uncordon NAME  ", "\n  node label NAME KEY=VALUE... KEY-...  ",
                           "\n  node pool NAME POOL [--queue Q]  "}) {
    EXPECT_NE(out_.str().find(line), std::string::npos) << line << out_.str();
  }
  EXPECT_EQ(clients_made_, 0);
}

}  // namespace
}  // namespace gpool
