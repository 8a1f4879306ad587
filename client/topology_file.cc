#include "client/topology_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "client/format.h"
#include "client/yaml_fields.h"
#include "protocol/messages_nodes.h"
#include "protocol/model/node_update.h"
#include "protocol/validate.h"

namespace gpool {
namespace {


using yaml_fields::FieldError;
using yaml_fields::Join;
using yaml_fields::Quote;

// The candidate nearest `word` when it is a likely typo (at most 2 edits, and
// fewer than the word's length, so 's' does not suggest 'l'), else "".
std::string NearestOf(std::string_view word, const std::vector<std::string>& candidates) {
  return yaml_fields::NearestOf(word, candidates, std::min<size_t>(3, word.size()));
}

// `node` is a map whose keys are plain, unique and in `allowed`.
Status CheckTopologyKeys(const YAML::Node& node, const std::string& path, const std::vector<std::string>& allowed) {
  return yaml_fields::CheckKeys(node, path, allowed, "topology file", NearestOf);
}

// A switch name becomes a label value; a node name must be one the
// coordinator accepts. Both use the same characters.
Status CheckName(const std::string& path, const std::string& name, size_t max_length) {
  if (name.empty()) return FieldError(path, "must not be empty");
  if (name.size() > max_length) {
    return FieldError(path, "'" + name + "' is longer than " + std::to_string(max_length) + " characters");
  }
  for (char c : name) {
    if (!IsNameChar(c)) return FieldError(path, "'" + name + "' may only contain letters, digits, '.', '_' and '-'");
  }
  return Status::Ok();
}

Result<std::string> ReadName(const YAML::Node& node, const std::string& path, size_t max_length) {
  if (!node.IsScalar()) return FieldError(path, "expected a name, got " + Quote(node));
  GPOOL_RETURN_IF_ERROR(CheckName(path, node.Scalar(), max_length));
  return node.Scalar();
}

Result<uint32_t> ReadTier(const YAML::Node& node, const std::string& path) {
  const std::string expected = "expected an integer from 1 to " + std::to_string(kMaxTopologyTier) + ", got ";
  if (!node.IsScalar()) return FieldError(path, expected + Quote(node));
  const std::string& text = node.Scalar();
  if (text.empty() || text.size() > 3 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return FieldError(path, expected + Quote(node));
  }
  const uint32_t tier = static_cast<uint32_t>(std::stoul(text));
  if (tier < 1 || tier > kMaxTopologyTier) return FieldError(path, expected + Quote(node));
  return tier;
}

// --- Parsing ---------------------------------------------------------------------------

const std::vector<std::string> kTopKeys = {"switches"};
const std::vector<std::string> kSwitchKeys = {"name", "tier", "parent", "nodes"};

// One switch's own fields; parents and nodes are checked once every name is known.
Result<TopologySwitch> ReadSwitch(const YAML::Node& node, const std::string& path) {
  GPOOL_RETURN_IF_ERROR(CheckTopologyKeys(node, path, kSwitchKeys));
  TopologySwitch sw;
  if (!node["name"]) return FieldError(Join(path, "name"), "required");
  GPOOL_ASSIGN_OR_RETURN(sw.name, ReadName(node["name"], Join(path, "name"), kMaxLabelValueLength));
  if (!node["tier"]) return FieldError(Join(path, "tier"), "required");
  GPOOL_ASSIGN_OR_RETURN(sw.tier, ReadTier(node["tier"], Join(path, "tier")));
  if (auto parent = node["parent"]) {
    GPOOL_ASSIGN_OR_RETURN(sw.parent, ReadName(parent, Join(path, "parent"), kMaxLabelValueLength));
  }
  if (auto nodes = node["nodes"]) {
    const std::string nodes_path = Join(path, "nodes");
    if (!nodes.IsSequence()) return FieldError(nodes_path, "expected a list of node names, got " + Quote(nodes));
    for (size_t i = 0; i < nodes.size(); ++i) {
      GPOOL_ASSIGN_OR_RETURN(std::string name,
                             ReadName(nodes[i], nodes_path + "[" + std::to_string(i) + "]", kMaxNodeNameLength));
      sw.nodes.push_back(std::move(name));
    }
  }
  return sw;
}

// The rules between switches: unique names, parents one tier up, nodes only
// under leaves and under one leaf each.
Status CheckTree(const Topology& topology) {
  std::map<std::string, size_t> index;  // name -> position in the file
  std::vector<std::string> names;
  for (size_t i = 0; i < topology.switches.size(); ++i) {
    const std::string& name = topology.switches[i].name;
    auto [it, inserted] = index.emplace(name, i);
    if (!inserted) {
      return FieldError("switches[" + std::to_string(i) + "].name",
                        "'" + name + "' is already switches[" + std::to_string(it->second) + "]");
    }
    names.push_back(name);
  }
  std::map<std::string, std::string> node_at;  // node -> where it was first listed
  for (size_t i = 0; i < topology.switches.size(); ++i) {
    const TopologySwitch& sw = topology.switches[i];
    const std::string path = "switches[" + std::to_string(i) + "]";
    if (!sw.parent.empty()) {
      auto parent = index.find(sw.parent);
      if (parent == index.end()) {
        std::string message = "unknown switch '" + sw.parent + "'";
        if (std::string hint = NearestOf(sw.parent, names); !hint.empty()) message += " (did you mean '" + hint + "'?)";
        return FieldError(path + ".parent", message);
      }
      const uint32_t parent_tier = topology.switches[parent->second].tier;
      if (parent_tier != sw.tier + 1) {
        return FieldError(path + ".parent", sw.parent + " is a tier-" + std::to_string(parent_tier) +
                                                " switch; the parent of a tier-" + std::to_string(sw.tier) +
                                                " switch must be tier " + std::to_string(sw.tier + 1));
      }
    }
    if (!sw.nodes.empty() && sw.tier != 1) {
      return FieldError(path + ".nodes", "only tier-1 switches list nodes (" + sw.name + " is tier " +
                                             std::to_string(sw.tier) + ")");
    }
    for (size_t n = 0; n < sw.nodes.size(); ++n) {
      const std::string where = path + ".nodes[" + std::to_string(n) + "]";
      auto [it, inserted] = node_at.emplace(sw.nodes[n], sw.name + " (" + where + ")");
      if (!inserted) return FieldError(where, sw.nodes[n] + " is already under " + it->second);
    }
  }
  return Status::Ok();
}

Result<Topology> ReadTopology(const YAML::Node& root) {
  if (!root || root.IsNull()) return FieldError("topology file", "empty; expected a map with a 'switches' list");
  GPOOL_RETURN_IF_ERROR(CheckTopologyKeys(root, "", kTopKeys));
  const YAML::Node switches = root["switches"];
  if (!switches) return FieldError("switches", "required");
  if (!switches.IsSequence()) return FieldError("switches", "expected a list of switches, got " + Quote(switches));
  if (switches.size() == 0) return FieldError("switches", "the list is empty");
  Topology topology;
  for (size_t i = 0; i < switches.size(); ++i) {
    GPOOL_ASSIGN_OR_RETURN(TopologySwitch sw, ReadSwitch(switches[i], "switches[" + std::to_string(i) + "]"));
    topology.switches.push_back(std::move(sw));
  }
  GPOOL_RETURN_IF_ERROR(CheckTree(topology));
  return topology;
}

// YAML reads null, ~ and the empty string as "no value", and a leading
// punctuation character may start YAML syntax; such names are quoted.
std::string YamlName(const std::string& name) {
  static const std::set<std::string> kNullWords = {"null", "Null", "NULL", "~"};
  const bool plain = !name.empty() && std::isalnum(static_cast<unsigned char>(name[0])) && !kNullWords.count(name);
  return plain ? name : "\"" + name + "\"";
}

}  // namespace

Result<Topology> ParseTopologyFile(std::string_view text, std::string_view source) {
  return yaml_fields::ReadYamlDocument(text, source, ReadTopology);
}

Result<Topology> LoadTopologyFile(const std::string& path) {
  GPOOL_ASSIGN_OR_RETURN(const std::string text, yaml_fields::ReadUserFile(path, "topology file"));
  return ParseTopologyFile(text, path);
}

std::string TopologyTierLabel(uint32_t tier) { return std::string(kTierLabelPrefix) + std::to_string(tier); }

uint32_t TopologyTierOf(std::string_view key) {
  if (key.substr(0, kTierLabelPrefix.size()) != kTierLabelPrefix) return 0;
  const std::string_view digits = key.substr(kTierLabelPrefix.size());
  if (digits.empty() || digits.size() > 6 || digits[0] == '0') return 0;
  uint32_t tier = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return 0;
    tier = tier * 10 + static_cast<uint32_t>(c - '0');
  }
  return tier;
}

std::map<std::string, std::map<std::string, std::string>> NodeLabels(const Topology& topology) {
  std::map<std::string, const TopologySwitch*> by_name;
  for (const auto& sw : topology.switches) by_name[sw.name] = &sw;
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const auto& sw : topology.switches) {
    if (sw.nodes.empty()) continue;
    // The chain from this leaf to its root; the parser's tier rule bounds it
    // at kMaxTopologyTier, and the bound also stops a malformed input.
    std::map<std::string, std::string> labels;
    const TopologySwitch* at = &sw;
    for (uint32_t steps = 0; at != nullptr && steps < kMaxTopologyTier; ++steps) {
      labels[TopologyTierLabel(at->tier)] = at->name;
      auto parent = at->parent.empty() ? by_name.end() : by_name.find(at->parent);
      at = parent == by_name.end() ? nullptr : parent->second;
    }
    for (const auto& node : sw.nodes) out[node] = labels;
  }
  return out;
}

std::string FormatTopologyFile(const Topology& topology, const std::vector<std::string>& comments) {
  std::ostringstream out;
  for (const auto& line : comments) out << (line.empty() ? "#" : "# " + line) << "\n";
  std::vector<const TopologySwitch*> order;
  for (const auto& sw : topology.switches) order.push_back(&sw);
  std::stable_sort(order.begin(), order.end(), [](const TopologySwitch* a, const TopologySwitch* b) {
    return a->tier != b->tier ? a->tier > b->tier : a->name < b->name;
  });
  out << "switches:\n";
  for (const TopologySwitch* sw : order) {
    out << "  - {name: " << YamlName(sw->name) << ", tier: " << sw->tier;
    if (!sw->parent.empty()) out << ", parent: " << YamlName(sw->parent);
    if (!sw->nodes.empty()) {
      std::vector<std::string> nodes = sw->nodes;
      std::sort(nodes.begin(), nodes.end());
      out << ", nodes: [";
      for (size_t i = 0; i < nodes.size(); ++i) out << (i == 0 ? "" : ", ") << YamlName(nodes[i]);
      out << "]";
    }
    out << "}\n";
  }
  return out.str();
}

std::string SummarizeTopology(const Topology& topology) {
  std::map<uint32_t, size_t, std::greater<>> by_tier;
  size_t nodes = 0;
  for (const auto& sw : topology.switches) {
    ++by_tier[sw.tier];
    nodes += sw.nodes.size();
  }
  std::string out;
  for (const auto& [tier, n] : by_tier) {
    out += std::to_string(n) + " tier-" + std::to_string(tier) + (n == 1 ? " switch, " : " switches, ");
  }
  return out + std::to_string(nodes) + (nodes == 1 ? " node" : " nodes");
}

// --- apply -----------------------------------------------------------------------------

TopologyApplyPlan PlanTopologyApply(const Topology& topology, const ListNodesReply& nodes) {
  const auto wanted = NodeLabels(topology);
  std::map<std::string, const NodeSummary*> registered;
  for (const auto& node : nodes.nodes) registered[node.name] = &node;

  TopologyApplyPlan plan;
  for (const auto& [name, labels] : wanted) {
    auto it = registered.find(name);
    if (it == registered.end()) {
      plan.unregistered.push_back(name);
      continue;
    }
    const std::map<std::string, std::string>& now = it->second->labels;
    NodeTopologyUpdate update;
    update.request.node = name;
    update.request.op = NodeUpdateOp::kLabel;
    // Every tier the file gives is sent, not only the ones that differ, so
    // the request states the node's whole place in the tree.
    update.request.labels = labels;
    std::map<uint32_t, TierLabelChange> changes;
    for (const auto& [key, value] : labels) {
      auto current = now.find(key);
      const std::string before = current == now.end() ? "" : current->second;
      const bool absent = current == now.end();
      if (absent || before != value) changes[TopologyTierOf(key)] = {TopologyTierOf(key), before, value};
    }
    for (const auto& [key, value] : now) {
      const uint32_t tier = TopologyTierOf(key);
      if (tier == 0 || labels.count(key)) continue;
      update.request.remove_labels.push_back(key);
      changes[tier] = {tier, value, ""};
    }
    if (changes.empty()) {
      ++plan.unchanged;
      continue;
    }
    for (auto& [tier, change] : changes) update.changes.push_back(std::move(change));
    plan.updates.push_back(std::move(update));
  }
  for (const auto& node : nodes.nodes) {
    if (wanted.count(node.name)) continue;
    std::map<std::string, std::string> tiers;
    for (const auto& [key, value] : node.labels) {
      if (TopologyTierOf(key) != 0) tiers[key] = value;
    }
    if (!tiers.empty()) plan.not_in_file[node.name] = std::move(tiers);
  }
  return plan;
}

std::string DescribeTierChanges(const std::vector<TierLabelChange>& changes) {
  std::string out;
  for (const auto& change : changes) {
    if (!out.empty()) out += ", ";
    // A label may exist with an empty value; "(none)" is reserved for absent.
    out += "tier" + std::to_string(change.tier) + " " + (change.before.empty() ? "(none)" : change.before) + " -> " +
           (change.after.empty() ? "(removed)" : change.after);
  }
  return out;
}

std::string DescribeTierLabels(const std::map<std::string, std::string>& labels) {
  std::map<uint32_t, std::string> by_tier;
  for (const auto& [key, value] : labels) {
    if (uint32_t tier = TopologyTierOf(key); tier != 0) by_tier[tier] = value;
  }
  std::string out;
  for (const auto& [tier, value] : by_tier) {
    out += (out.empty() ? "" : ", ") + ("tier" + std::to_string(tier)) + "=" + value;
  }
  return out;
}

std::string TopologyApplyToJson(const TopologyApplyPlan& plan, bool dry_run, size_t sent) {
  nlohmann::json updates = nlohmann::json::array();
  for (const auto& update : plan.updates) {
    updates.push_back({{"node", update.request.node},
                       {"labels", update.request.labels},
                       {"remove_labels", update.request.remove_labels}});
  }
  nlohmann::json out = {{"dry_run", dry_run},
                        {"updates", updates},
                        {"sent", sent},
                        {"unchanged", plan.unchanged},
                        {"unregistered", plan.unregistered}};
  return out.dump();
}

// --- show ------------------------------------------------------------------------------

namespace {

bool Schedulable(const NodeSummary& node) { return node.state == "Ready" && !node.cordoned; }

uint64_t FreeGpus(const NodeSummary& node) {
  if (!Schedulable(node) || node.gpus_used >= node.gpus_total) return 0;
  return node.gpus_total - node.gpus_used;
}

// A switch as the labels place it: the same name under two parents shows
// twice, which is the point of looking.
struct ShownSwitch {
  std::string name;
  uint32_t tier = 0;
  std::map<std::string, ShownSwitch> children;  // by name
  std::vector<const NodeSummary*> nodes;        // tier 1 only
  size_t node_count = 0;                        // under it, at any depth
  uint64_t gpus_free = 0;
  uint64_t gpus_total = 0;
};

struct ShownTree {
  std::vector<ShownSwitch> roots;  // highest tier first, then by name
  std::vector<const NodeSummary*> unlabelled;
  std::vector<std::string> problems;
};

ShownTree BuildTree(const ListNodesReply& reply) {
  std::vector<const NodeSummary*> nodes;
  for (const auto& node : reply.nodes) nodes.push_back(&node);
  std::sort(nodes.begin(), nodes.end(), [](const NodeSummary* a, const NodeSummary* b) { return a->name < b->name; });

  ShownTree tree;
  std::map<std::pair<uint32_t, std::string>, ShownSwitch> roots;  // (tier, name)
  // Where each switch appears: (tier, name) -> the names of its parents ("" for none).
  std::map<std::pair<uint32_t, std::string>, std::set<std::string>> parents;
  for (const NodeSummary* node : nodes) {
    std::vector<std::string> chain;  // tier1, tier2, ... up to the first missing tier
    uint32_t highest = 0;
    for (const auto& [key, value] : node->labels) highest = std::max(highest, TopologyTierOf(key));
    for (uint32_t tier = 1; tier <= highest; ++tier) {
      auto it = node->labels.find(TopologyTierLabel(tier));
      if (it == node->labels.end()) break;
      chain.push_back(it->second);
    }
    if (chain.size() < highest) {
      tree.problems.push_back(node->name + " has tier" + std::to_string(highest) + " but no tier" +
                              std::to_string(chain.size() + 1) + "; shown up to tier " + std::to_string(chain.size()));
    }
    if (chain.empty()) {
      tree.unlabelled.push_back(node);
      continue;
    }
    const uint32_t depth = static_cast<uint32_t>(chain.size());
    ShownSwitch* at = &roots[{depth, chain.back()}];
    for (uint32_t tier = depth;; --tier) {
      at->name = chain[tier - 1];
      at->tier = tier;
      at->node_count += 1;
      at->gpus_total += node->gpus_total;
      at->gpus_free += FreeGpus(*node);
      parents[{tier, at->name}].insert(tier == depth ? "" : chain[tier]);
      if (tier == 1) break;
      at = &at->children[chain[tier - 2]];
    }
    at->nodes.push_back(node);
  }
  for (auto& [key, root] : roots) tree.roots.push_back(std::move(root));
  std::stable_sort(tree.roots.begin(), tree.roots.end(), [](const ShownSwitch& a, const ShownSwitch& b) {
    return a.tier != b.tier ? a.tier > b.tier : a.name < b.name;
  });
  for (const auto& [where, above] : parents) {
    if (above.size() < 2) continue;
    std::string list;
    for (const auto& parent : above) list += (list.empty() ? "" : ", ") + (parent.empty() ? "(no parent)" : parent);
    tree.problems.push_back(where.second + " (tier " + std::to_string(where.first) + ") is under several switches: " +
                            list + "; the scheduler sees one tier-" + std::to_string(where.first) + " switch " +
                            where.second);
  }
  return tree;
}

std::string Gpus(uint64_t free, uint64_t total) { return std::to_string(free) + "/" + std::to_string(total); }

void AddRows(const ShownSwitch& sw, const std::string& indent, Table& table) {
  table.AddRow({indent + sw.name, std::to_string(sw.tier), std::to_string(sw.node_count),
                Gpus(sw.gpus_free, sw.gpus_total), "-"});
  for (const auto& [name, child] : sw.children) AddRows(child, indent + "  ", table);
  for (const NodeSummary* node : sw.nodes) {
    table.AddRow({indent + "  " + node->name, "-", "-", Gpus(FreeGpus(*node), node->gpus_total), node->state});
  }
}

nlohmann::json NodeJson(const NodeSummary& node) {
  return {{"name", node.name},
          {"state", node.state},
          {"gpus_free", FreeGpus(node)},
          {"gpus_total", node.gpus_total}};
}

nlohmann::json SwitchJson(const ShownSwitch& sw) {
  nlohmann::json children = nlohmann::json::array();
  for (const auto& [name, child] : sw.children) children.push_back(SwitchJson(child));
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodeSummary* node : sw.nodes) nodes.push_back(NodeJson(*node));
  return {{"name", sw.name},         {"tier", sw.tier},         {"gpus_free", sw.gpus_free},
          {"gpus_total", sw.gpus_total}, {"children", children}, {"nodes", nodes}};
}

}  // namespace

std::string FormatTopologyTree(const ListNodesReply& nodes) {
  if (nodes.nodes.empty()) return "No nodes.\n";
  const ShownTree tree = BuildTree(nodes);
  std::string out;
  if (tree.roots.empty()) {
    out += "No node carries " + TopologyTierLabel(1) +
           " (the switch tree is not labelled; see 'gpool topology apply').\n";
  } else {
    Table table({"NAME", "TIER", "NODES", "GPUS", "STATE"});
    for (const auto& root : tree.roots) AddRows(root, "", table);
    out += table.Render();
    out += "GPUS: free/total; free counts Ready, uncordoned nodes only.\n";
  }
  if (!tree.unlabelled.empty()) {
    out += "\nNot in the tree (no " + TopologyTierLabel(1) + " label):\n";
    Table table({"NAME", "GPUS", "STATE"});
    for (const NodeSummary* node : tree.unlabelled) {
      table.AddRow({node->name, Gpus(FreeGpus(*node), node->gpus_total), node->state});
    }
    out += table.Render("  ");
  }
  if (!tree.problems.empty()) {
    out += "\nProblems:\n";
    for (const auto& problem : tree.problems) out += "  " + problem + "\n";
  }
  return out;
}

std::string TopologyTreeToJson(const ListNodesReply& nodes) {
  const ShownTree tree = BuildTree(nodes);
  nlohmann::json switches = nlohmann::json::array();
  for (const auto& root : tree.roots) switches.push_back(SwitchJson(root));
  nlohmann::json unlabelled = nlohmann::json::array();
  for (const NodeSummary* node : tree.unlabelled) unlabelled.push_back(NodeJson(*node));
  nlohmann::json out = {{"switches", switches}, {"unlabelled", unlabelled}, {"problems", tree.problems}};
  return out.dump();
}

}  // namespace gpool
