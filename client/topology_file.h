// Topology files: the switch tree an operator writes down once, and what it
// means for the nodes' labels.
//
// The scheduler reads the switch tree from node labels only
// (topology.gpool.io/tier1 = the leaf a node hangs off, tier2 = the spine
// above that leaf, ...; control/scheduler/network.h). A topology file is the
// whole tree in one place; `gpool topology apply` turns it into those labels
// with UpdateNode, so the tree is changed at run time by editing the file and
// applying it again. See docs/topology.md.
//
// Format (YAML; JSON with the same keys is accepted since yaml-cpp reads both):
//
//   # tier 1 is nearest the nodes
//   switches:
//     - {name: spine-a, tier: 2}
//     - {name: leaf-1, tier: 1, parent: spine-a, nodes: [gpu-001, gpu-002]}
//
// Rules (each broken rule is an error naming the file and the field):
//   - `switches` is required; each switch has `name` and `tier`, and may have
//     `parent` and `nodes`. Unknown keys are errors, with a "did you mean" hint.
//   - A name is a label value: 1-63 of [A-Za-z0-9._-]. Names are unique in
//     the file, whatever their tier, because the scheduler groups nodes by the
//     label's value alone: two leaves called leaf-1 would be one domain.
//   - tier is 1 to 8 (the highest network_tier a job may ask for).
//   - A parent must be a switch of the file with a tier exactly one higher.
//     Skipping a tier would leave the nodes without that tier's label, and
//     the scheduler does not count a node without tierN in any tier-N domain.
//     Because tiers rise strictly towards the root there can be no cycles.
//   - A switch without a parent is a root, at any tier.
//   - Only tier-1 switches list nodes; a node is listed once in the file.
//     Node names follow the coordinator's node-name rule (1-253 of
//     [A-Za-z0-9._-]).
//   - A switch may have no nodes and no children (a spare): it gives no labels.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/messages_nodes.h"
#include "protocol/model/node_update.h"

namespace gpool {

constexpr uint32_t kMaxTopologyTier = 8;
constexpr std::string_view kTierLabelPrefix = "topology.gpool.io/tier";

struct TopologySwitch {
  std::string name;
  uint32_t tier = 0;
  std::string parent;               // empty: a root
  std::vector<std::string> nodes;   // tier 1 only; in file order
};

struct Topology {
  std::vector<TopologySwitch> switches;  // in file order
};

// Parses and checks a topology file. `source` (a file name) prefixes error
// messages: "topology.yaml: switches[2].parent: unknown switch 'spine-c'".
// All errors are InvalidArgument.
Result<Topology> ParseTopologyFile(std::string_view text, std::string_view source = {});

// Reads `path` and parses it; a missing file is InvalidArgument too.
Result<Topology> LoadTopologyFile(const std::string& path);

// "topology.gpool.io/tier<N>".
std::string TopologyTierLabel(uint32_t tier);
// N for a key "topology.gpool.io/tier<N>" (N >= 1, no leading zero); 0 for
// any other key.
uint32_t TopologyTierOf(std::string_view key);

// Every node of the file with its tier labels: tier1 = its leaf, tier2 =
// that leaf's parent, and so on up to the root. `topology` must be one that
// ParseTopologyFile accepted.
std::map<std::string, std::map<std::string, std::string>> NodeLabels(const Topology& topology);

// The file's text for `topology`: `comments` first (each line gets "# "),
// then the switches from the highest tier down, by name, one per line in
// flow style. ParseTopologyFile reads it back.
std::string FormatTopologyFile(const Topology& topology, const std::vector<std::string>& comments = {});

// "1 tier-2 switch, 4 tier-1 switches, 8 nodes": switches by tier, highest first.
std::string SummarizeTopology(const Topology& topology);

// --- apply -------------------------------------------------------------------------

// One tier label of one node, before and after ("" where it is absent).
struct TierLabelChange {
  uint32_t tier = 0;
  std::string before;
  std::string after;
};

// What `topology apply` sends to one node: one UpdateNode (op "label") that
// sets every tier label the file gives the node and removes the tier labels
// it has above its depth in the file.
struct NodeTopologyUpdate {
  UpdateNode request;
  std::vector<TierLabelChange> changes;  // by tier; only the labels that differ
};

struct TopologyApplyPlan {
  std::vector<NodeTopologyUpdate> updates;  // nodes whose labels differ, by name
  size_t unchanged = 0;                     // nodes of the file whose labels already match
  std::vector<std::string> unregistered;    // in the file, not registered; by name
  // Registered nodes the file does not name that carry tier labels: left
  // alone (a file may describe part of the cluster), but worth a note.
  std::map<std::string, std::map<std::string, std::string>> not_in_file;
};

// Compares the labels `topology` gives each node with the nodes' labels now.
TopologyApplyPlan PlanTopologyApply(const Topology& topology, const ListNodesReply& nodes);

// "tier1 leaf-0 -> leaf-1, tier2 (none) -> spine-a, tier3 spine-x -> (removed)".
std::string DescribeTierChanges(const std::vector<TierLabelChange>& changes);
// "tier1=leaf-1, tier2=spine-a": a node's tier labels, short keys, by tier.
std::string DescribeTierLabels(const std::map<std::string, std::string>& labels);

// {"dry_run":..,"updates":[{"node":..,"labels":{..},"remove_labels":[..]}],
//  "unchanged":N,"unregistered":[..]}; `sent` says how many updates went out.
std::string TopologyApplyToJson(const TopologyApplyPlan& plan, bool dry_run, size_t sent);

// --- show --------------------------------------------------------------------------

// The switch tree as the registered nodes' labels describe it, as an
// indented table (a switch's children two spaces deeper): NAME TIER NODES
// GPUS STATE, GPUS being free/total (free counts Ready, uncordoned nodes
// only, as the scheduler does); a leaf's nodes follow it. Then the nodes
// without a tier1 label, then any inconsistencies (a switch under two
// parents, a node with a gap in its tiers). A node's chain stops at its
// first missing tier.
std::string FormatTopologyTree(const ListNodesReply& nodes);
// The same as JSON: {"switches":[{"name","tier","nodes":[{"name","state",
// "gpus_free","gpus_total"}],"children":[..],"gpus_free","gpus_total"}],
// "unlabelled":[{node}], "problems":[".."]}.
std::string TopologyTreeToJson(const ListNodesReply& nodes);

}  // namespace gpool
