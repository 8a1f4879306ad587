// `gpool topology apply|show|convert`: the network switch tree, as tier labels
// on the nodes (apply, show) or a topology file made from a UFM export
// (convert, which needs no coordinator).
#include "client/cli_internal.h"

#include <fstream>
#include <limits>
#include <sstream>

#include "client/format.h"
#include "client/topology_file.h"
#include "client/ufm_convert.h"
#include "protocol/messages_nodes.h"
#include "protocol/model/node_update.h"
#include "protocol/types.h"
#include "protocol/validate.h"

namespace gpool::cli {
namespace {

constexpr char kTopologyApplyUsage[] = "topology apply FILE [--dry-run]";
constexpr char kTopologyShowUsage[] = "topology show";
constexpr char kTopologyConvertUsage[] = "topology convert FILE [--out FILE]";

// "1 node", "3 nodes".
std::string Count(size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// `topology apply FILE`: one UpdateNode per node whose tier labels differ
// from the file's; unregistered nodes are warned about and skipped, so a
// file may name nodes before they join. Stops at the first failed update:
// applying again finishes the job, since nodes already right are skipped.
int RunTopologyApply(Session& s, const Invocation& inv) {
  const std::string& file = inv.positionals[1];
  const bool dry_run = inv.flags["dry-run"].as<bool>();
  auto topology = LoadTopologyFile(file);
  if (!topology.ok()) return s.Fail(topology.status());
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto nodes = (*client)->ListNodes();
  if (!nodes.ok()) return s.Fail(nodes.status());
  const TopologyApplyPlan plan = PlanTopologyApply(*topology, *nodes);
  for (const auto& name : plan.unregistered) {
    s.err << "gpool: warning: " << name << " is in " << file
          << " but is not a registered node; skipped (apply again once it has joined)\n";
  }
  for (const auto& [name, labels] : plan.not_in_file) {
    s.err << "gpool: note: " << name << " is not in " << file << "; its labels " << DescribeTierLabels(labels)
          << " are left as they are\n";
  }
  size_t sent = 0;
  for (const auto& update : plan.updates) {
    const std::string& name = update.request.node;
    if (dry_run) {
      if (!s.json) s.out << "would update " << name << ": " << DescribeTierChanges(update.changes) << "\n";
      continue;
    }
    // Checked by the parser already; this guards what goes on the wire.
    if (Status valid = ValidateUpdateNode(update.request); !valid.ok()) return s.Fail(valid.WithContext(name));
    auto reply = (*client)->UpdateNode(update.request);
    if (!reply.ok()) {
      const int code = s.Fail(reply.status().WithContext("node " + name));
      s.err << "gpool: " << sent << " of " << Count(plan.updates.size(), "node")
            << " updated before this error; run 'gpool topology apply' again to finish\n";
      return code;
    }
    ++sent;
    if (!s.json) s.out << "updated " << name << ": " << DescribeTierChanges(update.changes) << "\n";
    for (const auto& key : update.request.remove_labels) {
      auto still = reply->node.labels.find(key);
      if (still != reply->node.labels.end()) {
        s.err << "gpool: note: " << key << " is still " << key << "=" << still->second << ": it comes from node "
              << name << "'s own labels, which 'topology apply' can override but not remove\n";
      }
    }
  }
  if (s.json) {
    s.out << TopologyApplyToJson(plan, dry_run, sent) << "\n";
    return kExitOk;
  }
  const std::string unregistered =
      plan.unregistered.empty() ? "" : ", " + std::to_string(plan.unregistered.size()) + " not registered";
  if (plan.updates.empty()) {
    s.out << "topology is up to date: " << Count(plan.unchanged, "node") << " unchanged" << unregistered
          << "; nothing sent\n";
  } else if (dry_run) {
    s.out << "dry run: " << Count(plan.updates.size(), "node") << " to update, " << plan.unchanged << " unchanged"
          << unregistered << "; nothing sent\n";
  } else {
    s.out << "topology applied: " << Count(sent, "node") << " updated, " << plan.unchanged << " unchanged"
          << unregistered << "\n";
  }
  return kExitOk;
}

int RunTopologyShow(Session& s) {
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ListNodes();
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? TopologyTreeToJson(*reply) + "\n" : FormatTopologyTree(*reply));
  return kExitOk;
}

// `topology convert FILE`: needs no coordinator. The notes go into the
// output as comments, and to stderr too when the output is a file.
int RunTopologyConvert(Session& s, const Invocation& inv) {
  const std::string& file = inv.positionals[1];
  std::string text;
  if (file == "-") {
    if (s.env.in == nullptr) return s.Usage("topology convert: no standard input to read the export from");
    std::ostringstream in;
    in << s.env.in->rdbuf();
    text = in.str();
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) return s.Fail(Status::InvalidArgument(file + ": cannot open the UFM export"));
    std::ostringstream read;
    read << in.rdbuf();
    text = read.str();
  }
  auto converted = ConvertUfmExport(text, file == "-" ? "<stdin>" : file);
  if (!converted.ok()) return s.Fail(converted.status());
  std::vector<std::string> comments = {
      "Generated by 'gpool topology convert' from " + (file == "-" ? std::string("<stdin>") : file) + ".",
      "Tier 1 is the leaf switch a node hangs off. Apply with: gpool topology apply " +
          (inv.flags.count("out") ? inv.flags["out"].as<std::string>() : std::string("FILE")),
      SummarizeTopology(converted->topology)};
  for (const auto& note : converted->notes) comments.push_back("note: " + note);
  const std::string yaml = FormatTopologyFile(converted->topology, comments);
  if (!inv.flags.count("out")) {
    s.out << yaml;
    return kExitOk;
  }
  const std::string out_path = inv.flags["out"].as<std::string>();
  {
    std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
    if (out) out << yaml;
    if (!out) return s.Fail(Status::IoError("--out: cannot write " + out_path));
  }
  for (const auto& note : converted->notes) s.err << "gpool: note: " << note << "\n";
  s.out << "wrote " << out_path << ": " << SummarizeTopology(converted->topology) << "\n";
  return kExitOk;
}

int RunTopology(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  if (p.empty()) return s.Usage("topology: expected a subcommand: apply, show or convert");
  const std::string& op = p[0];
  const char* usage = nullptr;
  size_t args = 0;
  if (op == "apply") {
    usage = kTopologyApplyUsage;
    args = 1;
  } else if (op == "show") {
    usage = kTopologyShowUsage;
  } else if (op == "convert") {
    usage = kTopologyConvertUsage;
    args = 1;
  } else {
    return s.Usage("topology: unknown subcommand '" + op + "'; expected apply, show or convert");
  }
  const std::string usage_hint = " (usage: gpool " + std::string(usage) + ")";
  if (op != "apply" && inv.flags["dry-run"].as<bool>()) return s.Usage("--dry-run only applies to 'topology apply'");
  if (op != "convert" && inv.flags.count("out")) return s.Usage("--out only applies to 'topology convert'");
  if (op == "convert" && s.json) return s.Usage("topology convert: --json does not apply (it writes a topology file)");
  if (p.size() - 1 != args) {
    return s.Usage("topology " + op + ": expected " + (args == 0 ? std::string("no arguments") : "a FILE") +
                   ", got " + Count(p.size() - 1, "argument") + usage_hint);
  }
  if (op == "apply") return RunTopologyApply(s, inv);
  if (op == "show") return RunTopologyShow(s);
  return RunTopologyConvert(s, inv);
}

void TopologyOptions(cxxopts::Options& o) {
  o.add_options("topology")
      ("dry-run", "apply: print the label changes without sending them",
       cxxopts::value<bool>()->default_value("false"))
      ("out", "convert: write the topology file here instead of to stdout", cxxopts::value<std::string>(), "FILE");
}

constexpr CommandForm kTopologyForms[] = {
    {"apply FILE [--dry-run]", "apply FILE [--dry-run]",
     "label the nodes with the switch tree of a topology file (docs/topology.md)"},
    {"show", "show", "show the switch tree the nodes' labels describe, with free/total GPUs"},
    {"convert FILE [--out FILE]", "convert FILE [--out FILE]", "turn a UFM systems+links export into a topology file"},
};

}  // namespace

const CommandDef kTopologyCommand = {
    .name = "topology",
    .synopsis = "apply|show|convert ...",
    .summary = "apply, show or convert the network switch tree",
    .min_args = 0,
    .max_args = std::numeric_limits<size_t>::max(),
    .add_options = TopologyOptions,
    .run = RunTopology,
    .forms = kTopologyForms,
};

}  // namespace gpool::cli
