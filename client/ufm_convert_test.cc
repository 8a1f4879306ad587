#include "client/ufm_convert.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/cli.h"
#include "client/test_support.h"
#include "client/testing/fake_client.h"
#include "protocol/messages_nodes.h"

namespace gpool {
namespace {

using client::testing::UniqueTempPath;

using client::testing::FakeCliTest;
using client::testing::InvalidArgumentMessage;
using client::testing::ReadFile;
using client::testing::RejectCase;

const std::string kTestdata = GPOOL_CLIENT_TESTDATA_DIR;

Result<UfmConversion> ConvertFixture(const std::string& name) {
  return ConvertUfmExport(ReadFile(kTestdata + "/" + name), name);
}

// The two-pod fixture: spine sw-spine-01 over sw-leaf-01..04, spine
// "MF0;sw-spine-02:MQM9700/U1" over sw-leaf-05..08, two hosts a leaf, two
// links from each leaf up, links in both directions, GUIDs with and without
// 0x, gpu-016 named only by its links, and a gateway.
constexpr char kTwoPodsTree[] =
    "switches:\n"
    "  - {name: MF0-sw-spine-02-MQM9700-U1, tier: 2}\n"
    "  - {name: sw-spine-01, tier: 2}\n"
    "  - {name: sw-leaf-01, tier: 1, parent: sw-spine-01, nodes: [gpu-001, gpu-002]}\n"
    "  - {name: sw-leaf-02, tier: 1, parent: sw-spine-01, nodes: [gpu-003, gpu-004]}\n"
    "  - {name: sw-leaf-03, tier: 1, parent: sw-spine-01, nodes: [gpu-005, gpu-006]}\n"
    "  - {name: sw-leaf-04, tier: 1, parent: sw-spine-01, nodes: [gpu-007, gpu-008]}\n"
    "  - {name: sw-leaf-05, tier: 1, parent: MF0-sw-spine-02-MQM9700-U1, nodes: [gpu-009, gpu-010]}\n"
    "  - {name: sw-leaf-06, tier: 1, parent: MF0-sw-spine-02-MQM9700-U1, nodes: [gpu-011, gpu-012]}\n"
    "  - {name: sw-leaf-07, tier: 1, parent: MF0-sw-spine-02-MQM9700-U1, nodes: [gpu-013, gpu-014]}\n"
    "  - {name: sw-leaf-08, tier: 1, parent: MF0-sw-spine-02-MQM9700-U1, nodes: [gpu-015, gpu-016]}\n";

// A fixture under testdata/ and the file and notes it converts to.
struct FixtureCase {
  std::string fixture;
  std::string tree;
  std::vector<std::string> notes;
};

TEST(UfmConvertTest, FixturesConvertToTheirTreesWithNotes) {
  const std::vector<FixtureCase> cases = {
      {"ufm-two-pods.json",
       kTwoPodsTree,
       {"left out 1 system of type gateway (only switches and hosts go in the tree)"}},
      // A dual-homed leaf takes the spine with most links, then the first name.
      {"ufm-dual-homed.json",
       "switches:\n"
       "  - {name: core-1, tier: 3}\n"
       "  - {name: spine-a, tier: 2, parent: core-1}\n"
       "  - {name: spine-b, tier: 2, parent: core-1}\n"
       "  - {name: leaf-1, tier: 1, parent: spine-a, nodes: [node-10, node-11]}\n"
       "  - {name: leaf-2, tier: 1, parent: spine-b, nodes: [node-20, node-21]}\n"
       "  - {name: leaf-3, tier: 1, parent: spine-a, nodes: [node-30, node-31]}\n"
       "  - {name: leaf-4, tier: 1, parent: spine-b, nodes: [node-40, node-41]}\n",
       {"leaf-2 is linked to several tier-2 switches: spine-b (2 links), spine-a (1 link); chose spine-b "
        "(most links, then name)",
        "leaf-3 is linked to several tier-2 switches: spine-a (1 link), spine-b (1 link); chose spine-a "
        "(most links, then name)"}},
      // A host on two leaves goes under the one with most links, then the first name.
      {"ufm-multi-leaf-host.json",
       "switches:\n"
       "  - {name: spine, tier: 2}\n"
       "  - {name: rail-0, tier: 1, parent: spine, nodes: [gpu-a]}\n"
       "  - {name: rail-1, tier: 1, parent: spine, nodes: [gpu-b]}\n",
       {"gpu-a is linked to several leaves: rail-0 (1 link), rail-1 (1 link); chose rail-0 (most links, then "
        "name)",
        "gpu-b is linked to several leaves: rail-1 (2 links), rail-0 (1 link); chose rail-1 (most links, then "
        "name)"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.fixture);
    auto converted = ConvertFixture(c.fixture);
    ASSERT_TRUE(converted.ok()) << converted.status().ToString();
    EXPECT_EQ(FormatTopologyFile(converted->topology), c.tree);
    EXPECT_EQ(converted->notes, c.notes);
  }
}

TEST(UfmConvertTest, TwoPodsLabelEveryHostUpToItsSpine) {
  auto converted = ConvertFixture("ufm-two-pods.json");
  ASSERT_TRUE(converted.ok()) << converted.status().ToString();
  const auto labels = NodeLabels(converted->topology);
  EXPECT_EQ(labels.size(), 16u);
  EXPECT_EQ(labels.at("gpu-016"), (std::map<std::string, std::string>{
                                      {"topology.gpool.io/tier1", "sw-leaf-08"},
                                      {"topology.gpool.io/tier2", "MF0-sw-spine-02-MQM9700-U1"}}));
}

TEST(UfmConvertTest, MalformedJsonIsAnInvalidArgumentNamingTheFile) {
  EXPECT_THAT(InvalidArgumentMessage(ConvertFixture("ufm-malformed.json")),
              ::testing::StartsWith("ufm-malformed.json: not valid JSON: parse error at line 4, column 3"));
}

// Found by fuzz/ufm: nlohmann::json throws out_of_range, not parse_error, for
// a number no double holds, and it escaped ConvertUfmExport and aborted the CLI.
TEST(UfmConvertTest, ANumberTooLargeForADoubleIsInvalidArgument) {
  auto result = ConvertUfmExport(R"({"systems": [], "links": [], "x": 3333333333e33333333})", "ufm.json");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), ::testing::HasSubstr("not valid JSON: number overflow"));
}

TEST(UfmConvertTest, RejectsWithErrorsNamingTheField) {
  // Nine switches in a chain above one host: the ninth would be tier 9.
  std::string chain = R"({"systems": [{"guid": "h", "type": "host", "system_name": "h"})";
  std::string chain_links = R"("links": [{"source_guid": "h", "destination_guid": "s1"})";
  for (int i = 1; i <= 9; ++i) {
    chain += R"(, {"guid": "s)" + std::to_string(i) + R"(", "type": "switch", "system_name": "s)" +
             std::to_string(i) + "\"}";
    if (i > 1) {
      chain_links += R"(, {"source_guid": "s)" + std::to_string(i - 1) + R"(", "destination_guid": "s)" +
                     std::to_string(i) + "\"}";
    }
  }
  chain += "], " + chain_links + "]}";

  const std::string sw = R"({"guid": "0x0A", "type": "switch", "system_name": "leaf"})";
  const std::vector<RejectCase> cases = {
      {"[]", "u.json: export: expected an object with 'systems' and 'links' lists, got a list"},
      {"{}", "u.json: systems: required"},
      {R"({"systems": []})", "u.json: links: required"},
      {R"({"systems": {}, "links": []})", "u.json: systems: expected a list, got an object"},
      {R"({"systems": [], "links": 3})", "u.json: links: expected a list, got 3"},
      {R"({"systems": [1], "links": []})", "u.json: systems[0]: expected an object, got 1"},
      {R"({"systems": [{"type": "switch"}], "links": []})", "u.json: systems[0].guid: required"},
      {R"({"systems": [{"guid": 10, "type": "switch"}], "links": []})",
       "u.json: systems[0].guid: expected a string, got 10"},
      {R"({"systems": [{"guid": "0x", "type": "switch"}], "links": []})", "u.json: systems[0].guid: must not be empty"},
      {R"({"systems": [{"guid": "1"}], "links": []})", "u.json: systems[0].type: required"},
      {R"({"systems": [{"guid": "1", "type": "host", "system_name": ["h"]}], "links": []})",
       "u.json: systems[0].system_name: expected a string, got a list"},
      {R"({"systems": [)" + sw + R"(, {"guid": "0A", "type": "host", "system_name": "h"}], "links": []})",
       "u.json: systems[1].guid: GUID 0A is already systems[0]'s"},
      {R"({"systems": [)" + sw + R"(], "links": ["x"]})", "u.json: links[0]: expected an object, got 'x'"},
      {R"({"systems": [)" + sw + R"(], "links": [{"destination_guid": "a"}]})",
       "u.json: links[0].source_guid: required"},
      {R"({"systems": [)" + sw + R"(], "links": [{"source_guid": "0x0a", "destination_guid": "0xff"}]})",
       "u.json: links[0].destination_guid: no system has GUID 0xff"},
      {R"({"systems": [)" + sw + R"(, {"guid": "b", "type": "host", "system_name": "gpu/001"}],
           "links": [{"source_guid": "0a", "destination_guid": "b"}]})",
       "u.json: systems[1].system_name: 'gpu/001' is not a valid node name (letters, digits, '.', '_' and '-')"},
      {R"({"systems": [)" + sw + R"(, {"guid": "b", "type": "host"}],
           "links": [{"source_guid": "0a", "destination_guid": "b"}]})",
       "u.json: systems[1].system_name: no node name (system_name is empty and no link names the host)"},
      {R"({"systems": [)" + sw + R"(, {"guid": "b", "type": "host", "system_name": "h"},
                       {"guid": "c", "type": "Host", "system_name": "h HCA-2"}], "links": []})",
       "u.json: systems[2].system_name: node name h is already systems[1]'s"},
      {R"({"systems": [)" + sw + R"(, {"guid": "b", "type": "host", "system_name": "h"}], "links": []})",
       "u.json: export: no switch is linked to a host; there is no tree to write"},
      {chain, "u.json: systems[9]: switch s9 would be tier 9; gpool labels at most 8 tiers"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(InvalidArgumentMessage(ConvertUfmExport(c.input, "u.json")), c.error) << c.input;
  }
}

TEST(UfmConvertTest, IgnoresLinksThatAreNotPartOfTheTreeAndMatchesSystemGuids) {
  auto converted = ConvertUfmExport(R"({
    "site_name": "dc-1",
    "systems": [
      {"guid": "0x0A", "type": "SWITCH", "system_name": "leaf", "extra": {"anything": 1}},
      {"guid": "0x0B", "type": "server", "system_guid": "0x0BB", "system_name": ""},
      {"guid": "0x0C", "type": "host", "system_name": "h2 HCA-1"},
      {"guid": "0x0D", "type": "router", "system_name": "r"},
      {"guid": "0x0E", "type": "switch", "system_name": "island"}
    ],
    "links": [
      {"source_guid": "0a", "destination_guid": "0BB", "destination_port_node_description": "h1 HCA-1:1"},
      {"source_guid": "0C", "destination_guid": "0A"},
      {"source_guid": "0B", "destination_guid": "0C"},
      {"source_guid": "0A", "destination_guid": "0A"},
      {"source_guid": "0D", "destination_guid": "0A"},
      {"source_guid": "0E", "destination_guid": "0D"}
    ]})");
  ASSERT_TRUE(converted.ok()) << converted.status().ToString();
  EXPECT_EQ(FormatTopologyFile(converted->topology), "switches:\n  - {name: leaf, tier: 1, nodes: [h1, h2]}\n");
  EXPECT_EQ(converted->notes,
            (std::vector<std::string>{"left out 1 system of type router (only switches and hosts go in the tree)",
                                      "left out switches that reach no host: island"}));
}

TEST(UfmConvertTest, SwitchNamesThatCollideGetTheirGuids) {
  auto converted = ConvertUfmExport(R"({
    "systems": [
      {"guid": "0x0B", "type": "switch", "system_name": "leaf/1"},
      {"guid": "0x0A", "type": "switch", "system_name": "leaf 1"},
      {"guid": "0x0C", "type": "switch"},
      {"guid": "1", "type": "host", "system_name": "n1"},
      {"guid": "2", "type": "host", "system_name": "n2"},
      {"guid": "3", "type": "host", "system_name": "n3"}
    ],
    "links": [
      {"source_guid": "1", "destination_guid": "0x0A"},
      {"source_guid": "2", "destination_guid": "0x0B"},
      {"source_guid": "3", "destination_guid": "0x0C"}
    ]})");
  ASSERT_TRUE(converted.ok()) << converted.status().ToString();
  EXPECT_EQ(FormatTopologyFile(converted->topology),
            "switches:\n"
            "  - {name: leaf-1-0a, tier: 1, nodes: [n1]}\n"
            "  - {name: leaf-1-0b, tier: 1, nodes: [n2]}\n"
            "  - {name: switch-0c, tier: 1, nodes: [n3]}\n");
}

TEST(UfmConvertTest, SanitizeSwitchName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sw-leaf-01", "sw-leaf-01"},
      {"MF0;sw-leaf-01:MQM8700/U1", "MF0-sw-leaf-01-MQM8700-U1"},
      {"  leaf 1  ", "leaf-1"},
      {"a//b", "a-b"},
      {"--a--", "a"},
      {"Le_af.2", "Le_af.2"},
      {"\xc3\x9c" "n\xc3\xaf" "code", "n-code"},
      {";;;", ""},
      {"", ""},
  };
  for (const auto& [raw, want] : cases) EXPECT_EQ(SanitizeSwitchName(raw), want) << raw;

  const std::string a = std::string(70, 'x') + "-a";
  const std::string b = std::string(70, 'x') + "-b";
  EXPECT_EQ(SanitizeSwitchName(a).size(), 63u);
  EXPECT_EQ(SanitizeSwitchName(a).substr(0, 55), std::string(54, 'x') + "-");
  EXPECT_NE(SanitizeSwitchName(a), SanitizeSwitchName(b));
  EXPECT_EQ(SanitizeSwitchName(a), SanitizeSwitchName(a));
  EXPECT_EQ(SanitizeSwitchName(std::string(63, 'y')), std::string(63, 'y'));
}

TEST(UfmConvertTest, HostNameFromDescription) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"gpu-001 HCA-1", "gpu-001"}, {"gpu-001 HCA-1:1", "gpu-001"}, {"gpu-001:1", "gpu-001"},
      {"  gpu-001", "gpu-001"},     {"gpu-001", "gpu-001"},         {"", ""},
  };
  for (const auto& [description, want] : cases) EXPECT_EQ(HostNameFromDescription(description), want) << description;
}

// --- gpool topology convert -----------------------------------------------------------------

using ConvertCliTest = FakeCliTest;

TEST_F(ConvertCliTest, PrintsTheTopologyFileWithItsNotesAsComments) {
  const std::string fixture = kTestdata + "/ufm-two-pods.json";
  ASSERT_EQ(Run({"topology", "convert", fixture}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "# Generated by 'gpool topology convert' from " + fixture +
                            ".\n"
                            "# Tier 1 is the leaf switch a node hangs off. Apply with: gpool topology apply FILE\n"
                            "# 2 tier-2 switches, 8 tier-1 switches, 16 nodes\n"
                            "# note: left out 1 system of type gateway (only switches and hosts go in the tree)\n" +
                            kTwoPodsTree);
  EXPECT_EQ(err_.str(), "");
  EXPECT_EQ(clients_made_, 0);  // no coordinator needed
}

TEST_F(ConvertCliTest, OutWritesAFileThatApplies) {
  const std::string out = UniqueTempPath("gpool_convert_test");
  ASSERT_EQ(Run({"topology", "convert", kTestdata + "/ufm-dual-homed.json", "--out", out}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "wrote " + out + ": 1 tier-3 switch, 2 tier-2 switches, 4 tier-1 switches, 8 nodes\n");
  EXPECT_EQ(err_.str(),
            "gpool: note: leaf-2 is linked to several tier-2 switches: spine-b (2 links), spine-a (1 link); chose "
            "spine-b (most links, then name)\n"
            "gpool: note: leaf-3 is linked to several tier-2 switches: spine-a (1 link), spine-b (1 link); chose "
            "spine-a (most links, then name)\n");
  EXPECT_NE(ReadFile(out).find("# note: leaf-3 is linked"), std::string::npos);

  NodeSummary node;
  node.name = "node-31";
  node.state = "Ready";
  cluster_->nodes.nodes = {node};
  ASSERT_EQ(Run({"topology", "apply", out}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->nodes.nodes[0].labels,
            (std::map<std::string, std::string>{{"topology.gpool.io/tier1", "leaf-3"},
                                                {"topology.gpool.io/tier2", "spine-a"},
                                                {"topology.gpool.io/tier3", "core-1"}}));
  std::remove(out.c_str());
}

TEST_F(ConvertCliTest, ReadsStdinAndReportsBadInput) {
  stdin_.str(ReadFile(kTestdata + "/ufm-multi-leaf-host.json"));
  ASSERT_EQ(Run({"topology", "convert", "-"}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("# Generated by 'gpool topology convert' from <stdin>.\n"), std::string::npos);

  EXPECT_EQ(Run({"topology", "convert", kTestdata + "/ufm-malformed.json"}), kExitUsage);
  EXPECT_THAT(err_.str(), ::testing::StartsWith("gpool: InvalidArgument: " + kTestdata +
                                                "/ufm-malformed.json: not valid JSON: parse error at line 4"));
  EXPECT_EQ(out_.str(), "");

  EXPECT_EQ(Run({"topology", "convert", "/nonexistent.json"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: /nonexistent.json: cannot open the UFM export\n");
  EXPECT_EQ(clients_made_, 0);
}

}  // namespace
}  // namespace gpool
