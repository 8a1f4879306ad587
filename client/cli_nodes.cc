// The node commands: `nodes` (the list) and `node show|cordon|uncordon|label|
// pool|taint`, which read one node or send UpdateNode.
#include "client/cli_internal.h"

#include <algorithm>
#include <limits>

#include "client/format.h"
#include "protocol/messages_nodes.h"
#include "protocol/model/node_update.h"
#include "protocol/types.h"
#include "protocol/validate.h"

namespace gpool::cli {
namespace {

int RunNodes(Session& s, const Invocation& inv) {
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ListNodes(inv.flags.count("devices") > 0);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
    return kExitOk;
  }
  s.out << FormatNodesTable(*reply, s.WallMs());
  if (inv.flags["devices"].as<bool>()) s.out << FormatNodeDevices(*reply);
  return kExitOk;
}

constexpr char kNodeShowUsage[] = "node show NAME";
constexpr char kNodeCordonUsage[] = "node cordon NAME";
constexpr char kNodeUncordonUsage[] = "node uncordon NAME";
constexpr char kNodeLabelUsage[] = "node label NAME KEY=VALUE... KEY-...";
constexpr char kNodePoolUsage[] = "node pool NAME public|pooled|exclusive [--queue Q]";
constexpr char kNodeTaintUsage[] = "node taint NAME KEY=VALUE... KEY-...";

std::string JoinLabels(const std::map<std::string, std::string>& labels) {
  std::string out;
  for (const auto& [key, value] : labels) {
    if (!out.empty()) out += ", ";
    out += key + "=" + value;
  }
  return out.empty() ? "none" : out;
}

// `node show NAME`: the node's entry of ListNodes (there is no request for one node).
int RunNodeShow(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  const std::string usage_hint = " (usage: gpool " + std::string(kNodeShowUsage) + ")";
  if (p.size() < 2) return s.Usage("node show: missing the node NAME" + usage_hint);
  if (p.size() > 2) {
    return s.Usage("node show: expected one node NAME, got " + std::to_string(p.size() - 1) + " arguments" +
                   usage_hint);
  }
  const std::string& name = p[1];
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ListNodes(/*devices=*/true);
  if (!reply.ok()) return s.Fail(reply.status());
  auto it = std::find_if(reply->nodes.begin(), reply->nodes.end(),
                         [&](const NodeSummary& node) { return node.name == name; });
  if (it == reply->nodes.end()) return s.Fail(Status::NotFound("node " + name + " is not registered"));
  s.out << (s.json ? ToJson(*it) + "\n" : FormatNodeDetail(*it, s.WallMs()));
  return kExitOk;
}

void NodeOptions(cxxopts::Options& o) {
  o.add_options("node")("queue", "pool exclusive: the queue that owns the node (only its jobs run there)",
                        cxxopts::value<std::string>(), "Q")(
      "fingerprint", "approve/reject: the pending key to act on, when several keys claim the name",
      cxxopts::value<std::string>(), "F");
}

int RunNode(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  if (p.empty()) {
    return s.Usage("node: expected a subcommand: show, cordon, uncordon, label, pool, taint, pending, approve or reject");
  }
  const std::string& op = p[0];
  if (op == "show") return RunNodeShow(s, inv);
  if (op == "pending" || op == "approve" || op == "reject") return RunNodeEnrolment(s, inv);  // cli_enrolment.cc
  if (inv.flags.count("fingerprint")) return s.Usage("--fingerprint belongs to 'node approve' and 'node reject'");
  const char* usage = nullptr;
  if (op == "cordon") {
    usage = kNodeCordonUsage;
  } else if (op == "uncordon") {
    usage = kNodeUncordonUsage;
  } else if (op == "label") {
    usage = kNodeLabelUsage;
  } else if (op == "pool") {
    usage = kNodePoolUsage;
  } else if (op == "taint") {
    usage = kNodeTaintUsage;
  } else {
    return s.Usage("node: unknown subcommand '" + op +
                   "'; expected show, cordon, uncordon, label, pool, taint, pending, approve or reject");
  }
  const std::string usage_hint = " (usage: gpool " + std::string(usage) + ")";
  if (p.size() < 2) return s.Usage("node " + op + ": missing the node NAME" + usage_hint);

  gpool::UpdateNode request;
  request.node = p[1];
  request.op = *EnumFromName<NodeUpdateOp>(op);  // the subcommands are the wire names, checked above
  if (op == "cordon" || op == "uncordon") {
    if (p.size() > 2) return s.Usage("node " + op + ": expected one node NAME, got " + std::to_string(p.size() - 1) +
                                     " arguments" + usage_hint);
  } else if (op == "label" || op == "taint") {
    if (p.size() < 3) {
      return s.Usage("node " + op + ": expected at least one KEY=VALUE (set) or KEY- (remove)" + usage_hint);
    }
    const auto args = std::span<const std::string>(p).subspan(2);
    Status parsed = op == "label"
                        ? ParseKeyValueArgs("node label", "label", args, request.labels, request.remove_labels)
                        : ParseKeyValueArgs("node taint", "taint", args, request.taints, request.remove_taints);
    if (!parsed.ok()) return s.Fail(parsed);
  } else {  // pool
    if (p.size() != 3) return s.Usage("node pool: expected a node NAME and a POOL" + usage_hint);
    request.pool = p[2];
    if (!NodePoolFromString(request.pool)) {
      return s.Fail(Status::InvalidArgument("node pool: unknown pool '" + request.pool + "'; expected " +
                                            Choices<NodePool>()));
    }
    if (inv.flags.count("queue")) request.queue = inv.flags["queue"].as<std::string>();
  }
  if (op != "pool" && inv.flags.count("queue")) {
    return s.Usage("node " + op + ": --queue belongs to 'node pool NAME exclusive --queue Q'" + usage_hint);
  }
  // What the coordinator checks too (the node name, the label rules), before anything is sent.
  if (Status valid = ValidateUpdateNode(request); !valid.ok()) return s.Fail(valid);

  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->UpdateNode(request);
  if (!reply.ok()) return s.Fail(reply.status());
  const NodeSummary& node = reply->node;
  const std::string name = node.name.empty() ? request.node : node.name;
  // Operator labels overlay the node's own (its worker's); removing one
  // brings back the node's value rather than deleting the key.
  for (const auto& key : request.remove_labels) {
    auto still = node.labels.find(key);
    if (still != node.labels.end()) {
      s.err << "gpool: note: " << key << " is still " << key << "=" << still->second << ": it comes from node "
            << name << "'s own labels, which 'node label' can override but not remove\n";
    }
  }
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
  } else if (op == "cordon" || op == "uncordon") {
    s.out << "node " << name << (node.cordoned ? " cordoned" : " uncordoned") << "\n";
  } else if (op == "label") {
    s.out << "node " << name << " labels: " << JoinLabels(node.labels) << "\n";
  } else if (op == "taint") {
    s.out << "node " << name << " taints: " << JoinLabels(node.taints) << "\n";
  } else {
    s.out << "node " << name << " moved to pool " << (node.pool.empty() ? request.pool : node.pool)
          << (node.pool_queue.empty() ? "" : " (owned by queue " + node.pool_queue + ")") << "\n";
  }
  return kExitOk;
}

void NodesOptions(cxxopts::Options& o) {
  o.add_options("nodes")
      ("devices", "also list each node's GPUs: UUID, model, memory, NUMA node, NVLink group, health, task",
       cxxopts::value<bool>()->default_value("false"));
}

constexpr CommandForm kNodeForms[] = {
    {"show NAME", "show NAME", "show a node: resources, labels, taints, NUMA nodes, GPUs and their NVLink groups"},
    {"cordon NAME", "cordon NAME", "place no new tasks on a node (running ones keep running)"},
    {"uncordon NAME", "uncordon NAME", "place tasks on a cordoned node again"},
    {"label NAME KEY=VALUE... KEY-...", "label NAME KEY=VALUE... KEY-...",
     "set (KEY=VALUE) or remove (KEY-) operator labels of a node"},
    {"pool NAME public|pooled|exclusive [--queue Q]", "pool NAME POOL [--queue Q]",
     "move a node to pool public, pooled or exclusive; an exclusive node may belong to queue Q"},
    {"taint NAME KEY=VALUE... KEY-...", "taint NAME KEY=VALUE... KEY-...",
     "set (KEY=VALUE) or remove (KEY-) taints; only jobs tolerating them run there"},
    {"pending", "pending", "list nodes waiting for admission: name, key fingerprint, devices claimed, first seen"},
    {"approve NAME [--fingerprint F]", "approve NAME", "admit a pending node (admin): its key is bound to the name"},
    {"reject NAME [--fingerprint F]", "reject NAME", "drop a pending node's enrolment (admin)"},
};

// A label argument starting with '-' would be taken for a flag ("Option 'x'
// does not exist"); say what is wrong with it instead.
std::optional<int> PrepareNode(Session& s, Invocation&, std::vector<std::string>& rest) {
  for (size_t i = 0; i < rest.size(); ++i) {
    const std::string& a = rest[i];
    if (TakesValue(a)) {
      ++i;  // a flag's value
    } else if (a.size() > 1 && a[0] == '-' && !IsLongFlagWithValue(a) &&
               (a.find('=') != std::string::npos || a.back() == '-')) {
      return s.Fail(Status::InvalidArgument("node: '" + a + "' is not a flag, and a label key cannot start " +
                                            "with '-'"));
    }
  }
  return std::nullopt;
}

}  // namespace

const CommandDef kNodesCommand = {
    .name = "nodes",
    .synopsis = "[--devices]",
    .summary = "list nodes: state, pool, used/total resources, taints, labels (--devices: GPUs too)",
    .min_args = 0,
    .max_args = 0,
    .add_options = NodesOptions,
    .run = RunNodes,
};

const CommandDef kNodeCommand = {
    .name = "node",
    .synopsis = "show|cordon|uncordon|label|pool|taint|pending|approve|reject NAME ...",
    .summary = "show, cordon, uncordon, label, re-pool or taint a node; admit or reject pending nodes",
    .min_args = 0,
    .max_args = std::numeric_limits<size_t>::max(),
    .add_options = NodeOptions,
    .run = RunNode,
    .forms = kNodeForms,
    .prepare = PrepareNode,
};

}  // namespace gpool::cli
