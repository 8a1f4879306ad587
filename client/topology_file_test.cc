#include "client/topology_file.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "client/cli.h"
#include "client/test_support.h"
#include "client/testing/fake_client.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_exec.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_users.h"
#include "protocol/model/node_update.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/users.h"

namespace gpool {
namespace {

using client::testing::UniqueTempPath;

using client::testing::FakeCliTest;
using client::testing::InvalidArgumentMessage;
using client::testing::RejectCase;
using client::testing::WriteFile;

using Labels = std::map<std::string, std::string>;

const std::string kT1 = "topology.gpool.io/tier1";
const std::string kT2 = "topology.gpool.io/tier2";
const std::string kT3 = "topology.gpool.io/tier3";

constexpr char kTwoLeaves[] =
    "# tier 1 is nearest the nodes\n"
    "switches:\n"
    "  - {name: spine-a, tier: 2}\n"
    "  - {name: leaf-1, tier: 1, parent: spine-a, nodes: [gpu-001, gpu-002]}\n"
    "  - {name: leaf-2, tier: 1, parent: spine-a, nodes: [gpu-003]}\n";

// --- Parsing -------------------------------------------------------------------------

TEST(TopologyFileTest, ParsesTheExampleFromTheDocs) {
  auto topology = ParseTopologyFile(kTwoLeaves, "t.yaml");
  ASSERT_TRUE(topology.ok()) << topology.status().ToString();
  ASSERT_EQ(topology->switches.size(), 3u);
  EXPECT_EQ(topology->switches[0].name, "spine-a");
  EXPECT_EQ(topology->switches[0].tier, 2u);
  EXPECT_EQ(topology->switches[0].parent, "");
  EXPECT_TRUE(topology->switches[0].nodes.empty());
  EXPECT_EQ(topology->switches[1].parent, "spine-a");
  EXPECT_EQ(topology->switches[1].nodes, (std::vector<std::string>{"gpu-001", "gpu-002"}));
}

TEST(TopologyFileTest, AcceptsBlockStyleJsonChildBeforeParentRootsAtAnyTierAndSpares) {
  const std::vector<std::string> accepted = {
      // Block style, and a child before its parent.
      "switches:\n"
      "  - name: leaf-1\n"
      "    tier: 1\n"
      "    parent: spine-a\n"
      "    nodes:\n"
      "      - gpu-001\n"
      "  - name: spine-a\n"
      "    tier: 2\n",
      // JSON.
      R"({"switches": [{"name": "core", "tier": 3}, {"name": "s1", "tier": 2, "parent": "core"},
                       {"name": "l1", "tier": 1, "parent": "s1", "nodes": ["n1"]}]})",
      // A lone leaf; a spare tier-3 root; a leaf without nodes; names of every allowed character.
      "switches:\n"
      "  - {name: leaf-1, tier: 1, nodes: [n1]}\n"
      "  - {name: spare, tier: 3}\n"
      "  - {name: Leaf_2.b-3, tier: 1, nodes: []}\n",
      // The highest tier.
      "switches: [{name: top, tier: 8}, {name: next, tier: 7, parent: top}]\n",
  };
  for (const auto& text : accepted) {
    auto topology = ParseTopologyFile(text, "t.yaml");
    EXPECT_TRUE(topology.ok()) << text << "\n" << topology.status().ToString();
  }
}

TEST(TopologyFileTest, RejectsWithErrorsNamingFileAndField) {
  const std::string long_name(64, 'x');
  const std::vector<RejectCase> cases = {
      {"", "t.yaml: topology file: empty; expected a map with a 'switches' list"},
      {"[1, 2]", "t.yaml: topology file: expected a map, got a list"},
      {"switches: [\n", "t.yaml:2:1: not valid YAML or JSON: end of sequence flow not found"},
      {"switch: []", "t.yaml: switch: unknown key (did you mean 'switches'?); allowed keys: switches"},
      {"nodes: []", "t.yaml: nodes: unknown key; allowed keys: switches"},
      // Unlike the job spec's, the hint is case-sensitive and needs fewer edits than the key has letters.
      {"SWITCHES: []", "t.yaml: SWITCHES: unknown key; allowed keys: switches"},
      {"switches: [{name: l, tier: 1, ti: x}]",
       "t.yaml: switches[0].ti: unknown key; allowed keys: name, tier, parent, nodes"},
      {"{}", "t.yaml: switches: required"},
      {"switches: {a: 1}", "t.yaml: switches: expected a list of switches, got a map"},
      {"switches: []", "t.yaml: switches: the list is empty"},
      {"switches: [leaf-1]", "t.yaml: switches[0]: expected a map, got 'leaf-1'"},
      {"switches: [{tier: 1}]", "t.yaml: switches[0].name: required"},
      {"switches: [{name: l, tier: 1, tier: 2}]", "t.yaml: switches[0].tier: duplicate key"},
      {"switches: [{name: l, teir: 1}]",
       "t.yaml: switches[0].teir: unknown key (did you mean 'tier'?); allowed keys: name, tier, parent, nodes"},
      {"switches: [{name: l, tier: 1, node: [a]}]",
       "t.yaml: switches[0].node: unknown key (did you mean 'nodes'?); allowed keys: name, tier, parent, nodes"},
      {"switches: [{name: l}]", "t.yaml: switches[0].tier: required"},
      {"switches: [{name: '', tier: 1}]", "t.yaml: switches[0].name: must not be empty"},
      {"switches: [{name: [a], tier: 1}]", "t.yaml: switches[0].name: expected a name, got a list"},
      {"switches: [{name: 'leaf 1', tier: 1}]",
       "t.yaml: switches[0].name: 'leaf 1' may only contain letters, digits, '.', '_' and '-'"},
      {"switches: [{name: 'a/b', tier: 1}]",
       "t.yaml: switches[0].name: 'a/b' may only contain letters, digits, '.', '_' and '-'"},
      {"switches: [{name: " + long_name + ", tier: 1}]",
       "t.yaml: switches[0].name: '" + long_name + "' is longer than 63 characters"},
      {"switches: [{name: l, tier: 0}]", "t.yaml: switches[0].tier: expected an integer from 1 to 8, got '0'"},
      {"switches: [{name: l, tier: 9}]", "t.yaml: switches[0].tier: expected an integer from 1 to 8, got '9'"},
      {"switches: [{name: l, tier: -1}]", "t.yaml: switches[0].tier: expected an integer from 1 to 8, got '-1'"},
      {"switches: [{name: l, tier: leaf}]", "t.yaml: switches[0].tier: expected an integer from 1 to 8, got 'leaf'"},
      {"switches: [{name: l, tier: 1.5}]", "t.yaml: switches[0].tier: expected an integer from 1 to 8, got '1.5'"},
      {"switches: [{name: l, tier: 1, nodes: gpu-1}]",
       "t.yaml: switches[0].nodes: expected a list of node names, got 'gpu-1'"},
      {"switches: [{name: l, tier: 1, nodes: ['gpu 1']}]",
       "t.yaml: switches[0].nodes[0]: 'gpu 1' may only contain letters, digits, '.', '_' and '-'"},
      {"switches: [{name: l, tier: 1, nodes: [a, {b: c}]}]",
       "t.yaml: switches[0].nodes[1]: expected a name, got a map"},
      {"switches: [{name: l, tier: 1}, {name: l, tier: 2}]", "t.yaml: switches[1].name: 'l' is already switches[0]"},
      {"switches: [{name: spine-a, tier: 2}, {name: l, tier: 1, parent: spine-b}]",
       "t.yaml: switches[1].parent: unknown switch 'spine-b' (did you mean 'spine-a'?)"},
      {"switches: [{name: l, tier: 1, parent: core}]", "t.yaml: switches[0].parent: unknown switch 'core'"},
      {"switches: [{name: core, tier: 3}, {name: l, tier: 1, parent: core}]",
       "t.yaml: switches[1].parent: core is a tier-3 switch; the parent of a tier-1 switch must be tier 2"},
      {"switches: [{name: a, tier: 2, parent: b}, {name: b, tier: 2, parent: a}]",
       "t.yaml: switches[0].parent: b is a tier-2 switch; the parent of a tier-2 switch must be tier 3"},
      {"switches: [{name: a, tier: 1, parent: a}]",
       "t.yaml: switches[0].parent: a is a tier-1 switch; the parent of a tier-1 switch must be tier 2"},
      {"switches: [{name: l, tier: 1, parent: s}, {name: s, tier: 2, nodes: [n1]}]",
       "t.yaml: switches[1].nodes: only tier-1 switches list nodes (s is tier 2)"},
      {"switches: [{name: l1, tier: 1, nodes: [n1, n2]}, {name: l2, tier: 1, nodes: [n3, n1]}]",
       "t.yaml: switches[1].nodes[1]: n1 is already under l1 (switches[0].nodes[0])"},
      {"switches: [{name: l1, tier: 1, nodes: [n1, n1]}]",
       "t.yaml: switches[0].nodes[1]: n1 is already under l1 (switches[0].nodes[0])"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(InvalidArgumentMessage(ParseTopologyFile(c.input, "t.yaml")), c.error) << c.input;
  }
}

TEST(TopologyFileTest, LoadNamesAMissingFile) {
  auto topology = LoadTopologyFile("/nonexistent/topology.yaml");
  ASSERT_FALSE(topology.ok());
  EXPECT_EQ(topology.status().message(), "/nonexistent/topology.yaml: cannot open the topology file");
}

TEST(TopologyFileTest, TheExampleFileParses) {
  auto topology = LoadTopologyFile(std::string(GPOOL_CLIENT_EXAMPLES_DIR) + "/topology.yaml");
  ASSERT_TRUE(topology.ok()) << topology.status().ToString();
  EXPECT_EQ(NodeLabels(*topology).size(), 4u);
}

// --- Labels ----------------------------------------------------------------------------

TEST(TopologyFileTest, NodeLabelsWalkUpToTheRoot) {
  auto topology = ParseTopologyFile(
      "switches:\n"
      "  - {name: core, tier: 3}\n"
      "  - {name: spine-a, tier: 2, parent: core}\n"
      "  - {name: spine-b, tier: 2}\n"
      "  - {name: leaf-1, tier: 1, parent: spine-a, nodes: [n1, n2]}\n"
      "  - {name: leaf-2, tier: 1, parent: spine-b, nodes: [n3]}\n"
      "  - {name: leaf-3, tier: 1, nodes: [n4]}\n"
      "  - {name: leaf-4, tier: 1, parent: spine-b}\n");
  ASSERT_TRUE(topology.ok()) << topology.status().ToString();
  const auto labels = NodeLabels(*topology);
  const std::map<std::string, Labels> expected = {
      {"n1", {{kT1, "leaf-1"}, {kT2, "spine-a"}, {kT3, "core"}}},
      {"n2", {{kT1, "leaf-1"}, {kT2, "spine-a"}, {kT3, "core"}}},
      {"n3", {{kT1, "leaf-2"}, {kT2, "spine-b"}}},
      {"n4", {{kT1, "leaf-3"}}},
  };
  EXPECT_EQ(labels, expected);
}

TEST(TopologyFileTest, TierOfLabelKeys) {
  const std::vector<std::pair<std::string, uint32_t>> cases = {
      {kT1, 1},
      {kT3, 3},
      {"topology.gpool.io/tier12", 12},
      {"topology.gpool.io/tier", 0},
      {"topology.gpool.io/tier0", 0},
      {"topology.gpool.io/tier01", 0},
      {"topology.gpool.io/tier1x", 0},
      {"topology.gpool.io/zone", 0},
      {"rack", 0},
  };
  for (const auto& [key, tier] : cases) EXPECT_EQ(TopologyTierOf(key), tier) << key;
  EXPECT_EQ(TopologyTierLabel(4), "topology.gpool.io/tier4");
}

TEST(TopologyFileTest, FormatWritesWhatParseReadsBack) {
  Topology topology;
  topology.switches = {{"leaf-2", 1, "spine", {"n3"}},
                       {"leaf-1", 1, "spine", {"n2", "n1"}},
                       {"spine", 2, "", {}},
                       {"null", 1, "", {"-odd", "NULL"}}};
  const std::string text = FormatTopologyFile(topology, {"Generated for a test.", "", "second line"});
  EXPECT_EQ(text,
            "# Generated for a test.\n"
            "#\n"
            "# second line\n"
            "switches:\n"
            "  - {name: spine, tier: 2}\n"
            "  - {name: leaf-1, tier: 1, parent: spine, nodes: [n1, n2]}\n"
            "  - {name: leaf-2, tier: 1, parent: spine, nodes: [n3]}\n"
            "  - {name: \"null\", tier: 1, nodes: [\"-odd\", \"NULL\"]}\n");
  auto reread = ParseTopologyFile(text);
  ASSERT_TRUE(reread.ok()) << reread.status().ToString();
  EXPECT_EQ(reread->switches[3].name, "null");
  EXPECT_EQ(reread->switches[3].nodes, (std::vector<std::string>{"-odd", "NULL"}));
  EXPECT_EQ(NodeLabels(*reread).at("n1"), (Labels{{kT1, "leaf-1"}, {kT2, "spine"}}));
  EXPECT_EQ(SummarizeTopology(*reread), "1 tier-2 switch, 3 tier-1 switches, 5 nodes");
}

// --- Planning an apply --------------------------------------------------------------------

NodeSummary MakeNode(const std::string& name, Labels labels, uint32_t gpus_total = 8, uint32_t gpus_used = 0,
                     const std::string& state = "Ready") {
  NodeSummary node;
  node.name = name;
  node.state = state;
  node.pool = "public";
  node.labels = std::move(labels);
  node.gpus_total = gpus_total;
  node.gpus_used = gpus_used;
  return node;
}

TEST(TopologyPlanTest, SetsWhatDiffersRemovesDeeperTiersAndSkipsTheRest) {
  auto topology = ParseTopologyFile(kTwoLeaves);
  ASSERT_TRUE(topology.ok());
  ListNodesReply nodes;
  nodes.nodes = {
      MakeNode("gpu-001", {{"rack", "r1"}}),                                         // no tier labels yet
      MakeNode("gpu-002", {{kT1, "leaf-1"}, {kT2, "spine-a"}}),                      // already right
      MakeNode("gpu-003", {{kT1, "leaf-9"}, {kT2, "spine-a"}, {kT3, "core"}}),       // moved; tier3 too deep
      MakeNode("gpu-009", {{kT1, "leaf-7"}, {"topology.gpool.io/zone", "z"}}),       // not in the file
      MakeNode("gpu-010", {}),                                                       // not in the file, no tiers
  };
  const TopologyApplyPlan plan = PlanTopologyApply(*topology, nodes);
  ASSERT_EQ(plan.updates.size(), 2u);
  const UpdateNode& first = plan.updates[0].request;
  EXPECT_EQ(first.node, "gpu-001");
  EXPECT_EQ(first.op, NodeUpdateOp::kLabel);
  EXPECT_EQ(first.labels, (Labels{{kT1, "leaf-1"}, {kT2, "spine-a"}}));
  EXPECT_TRUE(first.remove_labels.empty());
  EXPECT_EQ(DescribeTierChanges(plan.updates[0].changes), "tier1 (none) -> leaf-1, tier2 (none) -> spine-a");
  const UpdateNode& second = plan.updates[1].request;
  EXPECT_EQ(second.node, "gpu-003");
  EXPECT_EQ(second.labels, (Labels{{kT1, "leaf-2"}, {kT2, "spine-a"}}));
  EXPECT_EQ(second.remove_labels, (std::vector<std::string>{kT3}));
  EXPECT_EQ(DescribeTierChanges(plan.updates[1].changes), "tier1 leaf-9 -> leaf-2, tier3 core -> (removed)");
  EXPECT_EQ(plan.unchanged, 1u);
  EXPECT_TRUE(plan.unregistered.empty());
  EXPECT_EQ(plan.not_in_file, (std::map<std::string, Labels>{{"gpu-009", {{kT1, "leaf-7"}}}}));
  EXPECT_EQ(DescribeTierLabels(plan.not_in_file.at("gpu-009")), "tier1=leaf-7");

  // Unregistered nodes are listed, by name.
  nodes.nodes.erase(nodes.nodes.begin());
  const TopologyApplyPlan without = PlanTopologyApply(*topology, nodes);
  EXPECT_EQ(without.unregistered, (std::vector<std::string>{"gpu-001"}));
  EXPECT_EQ(without.updates.size(), 1u);
}

TEST(TopologyPlanTest, AnEmptyValueIsNotAbsent) {
  auto topology = ParseTopologyFile("switches: [{name: l, tier: 1, nodes: [n]}]");
  ASSERT_TRUE(topology.ok());
  ListNodesReply nodes;
  nodes.nodes = {MakeNode("n", {{kT1, ""}, {kT2, ""}})};
  const TopologyApplyPlan plan = PlanTopologyApply(*topology, nodes);
  ASSERT_EQ(plan.updates.size(), 1u);
  EXPECT_EQ(plan.updates[0].request.remove_labels, (std::vector<std::string>{kT2}));
  ASSERT_EQ(plan.updates[0].changes.size(), 2u);
  EXPECT_EQ(plan.updates[0].changes[1].before, "");
}

// --- Showing the tree ---------------------------------------------------------------------

TEST(TopologyShowTest, IndentedTreeWithFreeGpusThenUnlabelledThenProblems) {
  ListNodesReply nodes;
  nodes.nodes = {
      MakeNode("n2", {{kT1, "leaf-1"}, {kT2, "spine-a"}}, 8, 6),
      MakeNode("n1", {{kT1, "leaf-1"}, {kT2, "spine-a"}}, 8, 2),
      MakeNode("n3", {{kT1, "leaf-2"}, {kT2, "spine-a"}}, 8, 0, "NotReady"),
      MakeNode("n4", {{kT1, "leaf-2"}, {kT2, "spine-b"}}, 4, 0),
      MakeNode("n5", {{kT1, "leaf-3"}, {kT3, "core"}}, 4, 1),
      MakeNode("n6", {{"rack", "r1"}}, 8, 8),
      MakeNode("n7", {{kT2, "spine-a"}}, 2, 0, "Ready,Cordoned"),
  };
  nodes.nodes[6].cordoned = true;
  EXPECT_EQ(FormatTopologyTree(nodes),
            "NAME      TIER  NODES  GPUS  STATE\n"
            "spine-a   2     3      8/24  -\n"
            "  leaf-1  1     2      8/16  -\n"
            "    n1    -     -      6/8   Ready\n"
            "    n2    -     -      2/8   Ready\n"
            "  leaf-2  1     1      0/8   -\n"
            "    n3    -     -      0/8   NotReady\n"
            "spine-b   2     1      4/4   -\n"
            "  leaf-2  1     1      4/4   -\n"
            "    n4    -     -      4/4   Ready\n"
            "leaf-3    1     1      3/4   -\n"
            "  n5      -     -      3/4   Ready\n"
            "GPUS: free/total; free counts Ready, uncordoned nodes only.\n"
            "\n"
            "Not in the tree (no topology.gpool.io/tier1 label):\n"
            "  NAME  GPUS  STATE\n"
            "  n6    0/8   Ready\n"
            "  n7    0/2   Ready,Cordoned\n"
            "\n"
            "Problems:\n"
            "  n5 has tier3 but no tier2; shown up to tier 1\n"
            "  n7 has tier2 but no tier1; shown up to tier 0\n"
            "  leaf-2 (tier 1) is under several switches: spine-a, spine-b; the scheduler sees one tier-1 switch "
            "leaf-2\n");

  auto json = nlohmann::json::parse(TopologyTreeToJson(nodes));
  ASSERT_EQ(json["switches"].size(), 3u);
  EXPECT_EQ(json["switches"][0]["name"], "spine-a");
  EXPECT_EQ(json["switches"][0]["tier"], 2);
  EXPECT_EQ(json["switches"][0]["gpus_free"], 8);
  EXPECT_EQ(json["switches"][0]["gpus_total"], 24);
  EXPECT_EQ(json["switches"][0]["children"][0]["name"], "leaf-1");
  EXPECT_EQ(json["switches"][0]["children"][0]["nodes"][0],
            nlohmann::json::parse(R"({"name":"n1","state":"Ready","gpus_free":6,"gpus_total":8})"));
  EXPECT_EQ(json["unlabelled"].size(), 2u);
  EXPECT_EQ(json["problems"].size(), 3u);
}

TEST(TopologyShowTest, NoNodesAndNoLabels) {
  EXPECT_EQ(FormatTopologyTree(ListNodesReply{}), "No nodes.\n");
  ListNodesReply nodes;
  nodes.nodes = {MakeNode("n1", {})};
  EXPECT_EQ(FormatTopologyTree(nodes),
            "No node carries topology.gpool.io/tier1 (the switch tree is not labelled; see 'gpool topology apply').\n"
            "\n"
            "Not in the tree (no topology.gpool.io/tier1 label):\n"
            "  NAME  GPUS  STATE\n"
            "  n1    8/8   Ready\n");
}

// --- The CLI: gpool topology apply|show ----------------------------------------------------

class TopologyCliTest : public FakeCliTest {
 protected:
  TopologyCliTest() {
    cluster_->nodes.nodes = {MakeNode("gpu-001", {{"rack", "r1"}}, 8, 2),
                             MakeNode("gpu-002", {{kT1, "leaf-9"}, {kT2, "spine-a"}, {kT3, "core"}}),
                             MakeNode("gpu-010", {{kT1, "leaf-7"}})};
    path_ = UniqueTempPath("gpool_topology_cli_test");
    WriteFile(path_,
              "switches:\n"
              "  - {name: spine-a, tier: 2}\n"
              "  - {name: leaf-1, tier: 1, parent: spine-a, nodes: [gpu-001, gpu-002, gpu-003]}\n");
  }

  ~TopologyCliTest() override { std::remove(path_.c_str()); }

  const NodeSummary& Node(size_t i) const { return cluster_->nodes.nodes.at(i); }

  std::string path_;
};

TEST_F(TopologyCliTest, DryRunPrintsTheChangesAndSendsNothing) {
  ASSERT_EQ(Run({"topology", "apply", path_, "--dry-run"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "would update gpu-001: tier1 (none) -> leaf-1, tier2 (none) -> spine-a\n"
            "would update gpu-002: tier1 leaf-9 -> leaf-1, tier3 core -> (removed)\n"
            "dry run: 2 nodes to update, 0 unchanged, 1 not registered; nothing sent\n");
  EXPECT_EQ(err_.str(), "gpool: warning: gpu-003 is in " + path_ +
                            " but is not a registered node; skipped (apply again once it has joined)\n"
                            "gpool: note: gpu-010 is not in " + path_ +
                            "; its labels tier1=leaf-7 are left as they are\n");
  EXPECT_TRUE(cluster_->node_updates.empty());
  EXPECT_EQ(Node(0).labels, (Labels{{"rack", "r1"}}));
}

TEST_F(TopologyCliTest, ApplySendsOneUpdatePerChangedNodeAndReapplyingSendsNothing) {
  ASSERT_EQ(Run({"topology", "apply", path_}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "updated gpu-001: tier1 (none) -> leaf-1, tier2 (none) -> spine-a\n"
            "updated gpu-002: tier1 leaf-9 -> leaf-1, tier3 core -> (removed)\n"
            "topology applied: 2 nodes updated, 0 unchanged, 1 not registered\n");
  EXPECT_NE(err_.str().find("gpool: warning: gpu-003 is in "), std::string::npos) << err_.str();
  ASSERT_EQ(cluster_->node_updates.size(), 2u);
  EXPECT_EQ(cluster_->node_updates[0].node, "gpu-001");
  EXPECT_EQ(cluster_->node_updates[0].op, NodeUpdateOp::kLabel);
  EXPECT_EQ(cluster_->node_updates[0].labels, (Labels{{kT1, "leaf-1"}, {kT2, "spine-a"}}));
  EXPECT_TRUE(cluster_->node_updates[0].remove_labels.empty());
  EXPECT_EQ(cluster_->node_updates[1].node, "gpu-002");
  EXPECT_EQ(cluster_->node_updates[1].remove_labels, (std::vector<std::string>{kT3}));
  EXPECT_EQ(Node(0).labels, (Labels{{"rack", "r1"}, {kT1, "leaf-1"}, {kT2, "spine-a"}}));
  EXPECT_EQ(Node(1).labels, (Labels{{kT1, "leaf-1"}, {kT2, "spine-a"}}));
  EXPECT_EQ(Node(2).labels, (Labels{{kT1, "leaf-7"}}));

  // The same file again: nothing to do, nothing sent.
  ASSERT_EQ(Run({"topology", "apply", path_}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "topology is up to date: 2 nodes unchanged, 1 not registered; nothing sent\n");
  EXPECT_EQ(cluster_->node_updates.size(), 2u);

  // Once the missing node joins, only it is labelled.
  cluster_->nodes.nodes.push_back(MakeNode("gpu-003", {}));
  ASSERT_EQ(Run({"topology", "apply", path_}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "updated gpu-003: tier1 (none) -> leaf-1, tier2 (none) -> spine-a\n"
            "topology applied: 1 node updated, 2 unchanged\n");
  EXPECT_EQ(cluster_->node_updates.size(), 3u);
}

TEST_F(TopologyCliTest, MovingALeafUnderAnotherSpineRelabelsItsNodes) {
  ASSERT_EQ(Run({"topology", "apply", path_}), kExitOk) << err_.str();
  WriteFile(path_,
            "switches:\n"
            "  - {name: spine-b, tier: 2}\n"
            "  - {name: leaf-1, tier: 1, parent: spine-b, nodes: [gpu-001]}\n"
            "  - {name: leaf-2, tier: 1, nodes: [gpu-002]}\n");
  ASSERT_EQ(Run({"topology", "apply", path_, "--json"}), kExitOk) << err_.str();
  auto json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["dry_run"], false);
  EXPECT_EQ(json["sent"], 2);
  EXPECT_EQ(json["unchanged"], 0);
  EXPECT_EQ(json["updates"][1], nlohmann::json::parse(R"({"node": "gpu-002",
      "labels": {"topology.gpool.io/tier1": "leaf-2"}, "remove_labels": ["topology.gpool.io/tier2"]})"));
  EXPECT_EQ(Node(0).labels.at(kT2), "spine-b");
  EXPECT_EQ(Node(1).labels, (Labels{{kT1, "leaf-2"}}));
}

TEST_F(TopologyCliTest, ATierFromTheNodesOwnSpecCannotBeRemovedAndSaysSo) {
  cluster_->spec_labels["gpu-002"] = {{kT3, "core"}};
  ASSERT_EQ(Run({"topology", "apply", path_}), kExitOk) << err_.str();
  EXPECT_NE(err_.str().find("gpool: note: topology.gpool.io/tier3 is still topology.gpool.io/tier3=core: it comes "
                            "from node gpu-002's own labels, which 'topology apply' can override but not remove\n"),
            std::string::npos)
      << err_.str();
}

// A FakeClient whose UpdateNode fails for one node (FakeCluster::fail_next
// would fail the ListNodes that apply starts with).
class FailUpdateOf final : public Client {
 public:
  FailUpdateOf(std::shared_ptr<FakeCluster> cluster, std::string node, Status status)
      : fake_(std::move(cluster)), node_(std::move(node)), status_(std::move(status)) {}
  Result<UpdateNodeReply> UpdateNode(const gpool::UpdateNode& request) override {
    if (request.node == node_) return status_;
    return fake_.UpdateNode(request);
  }
  Result<ListNodesReply> ListNodes(bool devices) override { return fake_.ListNodes(devices); }
  Result<SubmitJobReply> Submit(const JobSpec& spec, std::string key) override { return fake_.Submit(spec, key); }
  Result<ListJobsReply> ListJobs(bool all, uint32_t limit) override { return fake_.ListJobs(all, limit); }
  Result<GetJobReply> GetJob(JobId job) override { return fake_.GetJob(job); }
  Result<CancelJobReply> CancelJob(JobId job, uint32_t grace) override { return fake_.CancelJob(job, grace); }
  Result<GetTaskLogReply> GetTaskLog(JobId job, uint32_t task, uint32_t max) override {
    return fake_.GetTaskLog(job, task, max);
  }
  Result<ClusterStatusReply> ClusterStatus() override { return fake_.ClusterStatus(); }
  Result<ChangeReplicasReply> ChangeReplicas(const gpool::ChangeReplicas& r) override {
    return fake_.ChangeReplicas(r);
  }
  Result<UpdateQueueReply> UpdateQueue(const gpool::UpdateQueue& r) override { return fake_.UpdateQueue(r); }
  Result<ListQueuesReply> ListQueues() override { return fake_.ListQueues(); }
  Result<ExplainJobReply> ExplainJob(JobId job) override { return fake_.ExplainJob(job); }
  Result<RenewSessionReply> RenewSession(JobId session) override { return fake_.RenewSession(session); }
  Result<ListJobsReply> ListSessions(bool include_finished, uint32_t limit) override {
    return fake_.ListSessions(include_finished, limit);
  }
  Result<ListEventsReply> ListEvents(const gpool::ListEvents& r) override { return fake_.ListEvents(r); }
  Result<ExecStartReply> ExecStart(const gpool::ExecStart& r) override { return fake_.ExecStart(r); }
  Result<ExecPollReply> ExecPoll(const gpool::ExecPoll& r) override { return fake_.ExecPoll(r); }
  Status ExecSignal(const gpool::ExecSignal& r) override { return fake_.ExecSignal(r); }
  Result<UpdateUserReply> UpdateUser(const gpool::UpdateUser& r) override { return fake_.UpdateUser(r); }
  Result<ListUsersReply> ListUsers() override { return fake_.ListUsers(); }
  Result<UpdateUserReply> Bootstrap(const gpool::Bootstrap& r) override { return fake_.Bootstrap(r); }
  Result<WhoAmIReply> WhoAmI() override { return fake_.WhoAmI(); }
  Result<ListAuditReply> ListAudit(const gpool::ListAudit& r) override { return fake_.ListAudit(r); }
  Result<ReportProbeReply> ReportProbe(const gpool::ReportProbe& r) override { return fake_.ReportProbe(r); }

 private:
  FakeClient fake_;
  std::string node_;
  Status status_;
};

TEST_F(TopologyCliTest, AFailedUpdateStopsAndSaysHowFarItGot) {
  WriteFile(path_, "switches: [{name: l, tier: 1, nodes: [gpu-001, gpu-002, gpu-010]}]\n");
  ClientFactory factory = [this](const ClientOptions&) -> Result<std::unique_ptr<Client>> {
    return std::unique_ptr<Client>(new FailUpdateOf(cluster_, "gpu-002", Status::Unavailable("no leader")));
  };
  EXPECT_EQ(RunCli({"topology", "apply", path_}, out_, err_, factory, env_), kExitUnavailable);
  EXPECT_EQ(out_.str(), "updated gpu-001: tier1 (none) -> l\n");
  EXPECT_EQ(err_.str(),
            "gpool: Unavailable: node gpu-002: no leader\n"
            "gpool: 1 of 3 nodes updated before this error; run 'gpool topology apply' again to finish\n");
  // gpu-010 comes after the failure and is not tried.
  EXPECT_EQ(cluster_->node_updates.size(), 1u);
}

TEST_F(TopologyCliTest, ErrorsAndUsage) {
  EXPECT_EQ(Run({"topology", "apply", "/nonexistent.yaml"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: /nonexistent.yaml: cannot open the topology file\n");
  EXPECT_EQ(clients_made_, 0);

  WriteFile(path_, "switches: [{name: l, tier: 1, parent: s}]\n");
  EXPECT_EQ(Run({"topology", "apply", path_}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: " + path_ + ": switches[0].parent: unknown switch 's'\n");
  EXPECT_EQ(clients_made_, 0);

  const std::vector<std::pair<std::vector<std::string>, std::string>> usage = {
      {{"topology"}, "topology: expected a subcommand: apply, show or convert"},
      {{"topology", "list"}, "topology: unknown subcommand 'list'; expected apply, show or convert"},
      {{"topology", "apply"},
       "topology apply: expected a FILE, got 0 arguments (usage: gpool topology apply FILE [--dry-run])"},
      {{"topology", "apply", "a", "b"},
       "topology apply: expected a FILE, got 2 arguments (usage: gpool topology apply FILE [--dry-run])"},
      {{"topology", "show", "x"}, "topology show: expected no arguments, got 1 argument (usage: gpool topology show)"},
      {{"topology", "show", "--dry-run"}, "--dry-run only applies to 'topology apply'"},
      {{"topology", "apply", "f", "--out", "x"}, "--out only applies to 'topology convert'"},
      {{"topology", "convert", "f", "--json"}, "topology convert: --json does not apply (it writes a topology file)"},
  };
  for (const auto& [args, message] : usage) {
    EXPECT_EQ(Run(args), kExitUsage) << message;
    EXPECT_EQ(err_.str(), "gpool: InvalidArgument: " + message + "\nRun 'gpool --help' for usage.\n");
  }
  EXPECT_EQ(clients_made_, 0);
  EXPECT_TRUE(cluster_->node_updates.empty());
}

TEST_F(TopologyCliTest, ShowPrintsTheTreeFromTheLabels) {
  ASSERT_EQ(Run({"topology", "apply", path_}), kExitOk) << err_.str();
  ASSERT_EQ(Run({"topology", "show"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "NAME         TIER  NODES  GPUS   STATE\n"
            "spine-a      2     2      14/16  -\n"
            "  leaf-1     1     2      14/16  -\n"
            "    gpu-001  -     -      6/8    Ready\n"
            "    gpu-002  -     -      8/8    Ready\n"
            "leaf-7       1     1      8/8    -\n"
            "  gpu-010    -     -      8/8    Ready\n"
            "GPUS: free/total; free counts Ready, uncordoned nodes only.\n");
  ASSERT_EQ(Run({"topology", "show", "--json"}), kExitOk) << err_.str();
  EXPECT_EQ(nlohmann::json::parse(out_.str())["switches"].size(), 2u);
}

TEST_F(TopologyCliTest, HelpListsTheForms) {
  ASSERT_EQ(Run({"--help"}), kExitOk);
  EXPECT_NE(out_.str().find("topology apply FILE [--dry-run]"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("topology convert FILE [--out FILE]"), std::string::npos);
  ASSERT_EQ(Run({"help", "topology"}), kExitOk);
  EXPECT_NE(out_.str().find("--dry-run"), std::string::npos) << out_.str();
}

}  // namespace
}  // namespace gpool
