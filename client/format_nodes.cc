// `gpool nodes` and `gpool node show`: the nodes table, the device tables and
// what tenants hold of each device, and a node's detail (format.h).
#include <sstream>
#include <string>
#include <vector>

#include "client/format.h"
#include "client/format_cores.h"
#include "client/format_health.h"
#include "client/format_text.h"

namespace gpool {

namespace {
// The pool, with the owning queue of an exclusive node: "exclusive:vision".
std::string PoolCell(const NodeSummary& node) {
  return node.pool_queue.empty() ? Dash(node.pool) : node.pool + ":" + node.pool_queue;
}
}  // namespace

std::string FormatNodesTable(const ListNodesReply& reply, int64_t now_ms) {
  if (reply.nodes.empty()) return "No nodes.\n";
  Table table({"NAME", "STATE", "HEALTH", "POOL", "GPUS", "CPUS", "MEM(GiB)", "MODELS", "TASKS", "LAST SEEN",
               "TAINTS", "LABELS"});
  for (const auto& node : reply.nodes) {
    // A node not heard from has no current health, only its last report.
    const bool heard = node.state.rfind("Ready", 0) == 0;
    const std::string health = heard || !node.health.empty() ? HealthCell(node.health) : "-";
    table.AddRow({node.name, Dash(node.state), text::Shorten(health, 40), PoolCell(node),
                  NodeGpusCell(node), text::Ratio(FormatCores(node.cpu_milli_used), FormatCores(node.cpu_milli_total)),
                  text::Ratio(FormatGiB(node.memory_mib_used), FormatGiB(node.memory_mib_total)),
                  Dash(text::JoinStrings(node.gpu_models, ",")), std::to_string(node.tasks),
                  FormatAgo(node.last_seen_ms, now_ms), Dash(text::Shorten(text::JoinKeyValues(node.taints), text::kMaxLabelsCell)),
                  Dash(text::Shorten(text::JoinKeyValues(node.labels), text::kMaxLabelsCell))});
  }
  return table.Render();
}

// What tenants hold of a device: "2 shares 30/80 GiB 50% fixed-share",
// "MIG dynamic 1g.10gb@0 3g.40gb@4 (+2g.20gb@4 free)", "cores 0-1", or "-".
std::string SharingCell(const DeviceSummary& d) {
  std::vector<std::string> mig;
  uint64_t memory = 0;
  uint32_t compute = 0;
  uint32_t shares = 0;
  std::set<std::string> qos;
  std::vector<std::string> cores;
  for (const auto& tenant : d.tenants) {
    const DeviceGrant& g = tenant.grant;
    if (!g.mig_profile.empty()) {
      mig.push_back(g.mig_profile + "@" + std::to_string(g.mig_start));
    } else if (g.shared) {
      ++shares;
      memory += g.gpu_memory_mib;
      compute += g.gpu_compute_pct;
      qos.insert(g.sharing_qos);
    }
    for (uint32_t core : g.cores) cores.push_back(std::to_string(core));
  }
  std::vector<std::string> parts;
  if (!d.mig_mode.empty()) {
    std::string text = "MIG " + d.mig_mode;
    for (const auto& instance : mig) text += " " + instance;
    if (!d.mig_free.empty()) {
      std::vector<std::string> free;
      for (const auto& instance : d.mig_free) free.push_back(instance.profile + "@" + std::to_string(instance.start));
      text += " (free " + text::JoinStrings(free, " ") + ")";
    }
    parts.push_back(text);
  }
  if (shares > 0) {
    parts.push_back(std::to_string(shares) + (shares == 1 ? " share " : " shares ") + FormatGiB(memory) + "/" +
                    FormatGiB(d.memory_mib) + " GiB " + std::to_string(compute) + "% " +
                    text::JoinStrings(std::vector<std::string>(qos.begin(), qos.end()), ","));
  }
  if (!cores.empty()) parts.push_back("cores " + text::JoinStrings(cores, ","));
  if (d.time_slices > 0) parts.push_back(TimeSliceCell(d));
  return parts.empty() ? "-" : text::JoinStrings(parts, "; ");
}

std::string DeviceHolders(const DeviceSummary& d) {
  if (!d.task.empty()) return d.task;
  std::vector<std::string> tasks;
  for (const auto& tenant : d.tenants) tasks.push_back(tenant.task);
  return tasks.empty() ? "-" : text::JoinStrings(tasks, ",");
}

std::string FormatDeviceTable(const NodeSummary& node, bool short_uuids, std::string_view indent) {
  Table table({"INDEX", "UUID", "MODEL", "MEM(GiB)", "NUMA", "LINK GROUP", "HEALTH", "SHARING", "TASK"});
  for (const auto& d : node.devices) {
    table.AddRow({std::to_string(d.index), short_uuids ? ShortUuid(d.uuid) : Dash(d.uuid), Dash(text::Shorten(d.model)),
                  d.memory_mib == 0 ? "-" : FormatGiB(d.memory_mib), d.numa < 0 ? "-" : std::to_string(d.numa),
                  d.link_group < 0 ? "-" : std::to_string(d.link_group), d.healthy ? "ok" : "unhealthy",
                  SharingCell(d), DeviceHolders(d)});
  }
  return table.Render(indent);
}

std::string FormatNodeDevices(const ListNodesReply& reply) {
  std::string out;
  for (const auto& node : reply.nodes) {
    out += "\nNode " + node.name + ":\n";
    out += node.devices.empty() ? "  No devices.\n" : FormatDeviceTable(node, /*short_uuids=*/true, "  ");
  }
  return out;
}

std::string FormatNodeDetail(const NodeSummary& node, int64_t now_ms) {
  std::ostringstream out;
  out << "Node " << node.name << "\n";
  Table summary({"State:", Dash(node.state)});
  summary.AddRow({"Hostname:", Dash(node.hostname)});
  summary.AddRow({"Pool:", node.pool_queue.empty() ? Dash(node.pool) : node.pool + " (owned by queue " +
                                                                               node.pool_queue + ")"});
  summary.AddRow({"Labels:", node.labels.empty() ? "none" : text::JoinKeyValues(node.labels, ", ")});
  summary.AddRow({"Taints:", node.taints.empty() ? "none" : text::JoinKeyValues(node.taints, ", ")});
  std::string gpus = NodeGpusCell(node) + " used";
  if (!node.gpu_models.empty()) gpus += " (" + text::JoinStrings(node.gpu_models, ", ") + ")";
  const auto unhealthy = std::count_if(node.devices.begin(), node.devices.end(),
                                       [](const DeviceSummary& d) { return !d.healthy; });
  if (unhealthy > 0) gpus += "; " + std::to_string(unhealthy) + " unhealthy, not counted";
  summary.AddRow({"GPUs:", gpus});
  summary.AddRow({"CPUs:", text::Ratio(FormatCores(node.cpu_milli_used), FormatCores(node.cpu_milli_total)) + " cores used"});
  summary.AddRow({"Memory:", text::Ratio(FormatGiB(node.memory_mib_used), FormatGiB(node.memory_mib_total)) + " GiB used"});
  summary.AddRow({"Tasks:", std::to_string(node.tasks)});
  summary.AddRow({"Last seen:", FormatAgo(node.last_seen_ms, now_ms)});
  if (node.cordoned) summary.AddRow({"Cordoned by:", Dash(node.cordon_reason)});
  summary.AddRow({"Health:", HealthCell(node.health)});
  out << summary.Render("  ");

  out << "\nConditions:\n" << FormatConditions(node.health, now_ms);

  out << "\nNUMA nodes:";
  if (node.numa.empty()) {
    out << " none reported\n";
  } else {
    out << "\n" << FormatNumaTable(node, "  ");
  }

  out << "\nDevices:";
  if (node.devices.empty()) {
    out << " none reported\n";
  } else {
    out << "\n" << FormatDeviceTable(node, /*short_uuids=*/false, "  ");
    out << "\nNVLink groups:\n";
    for (const auto& line : DescribeLinkGroups(node)) out << "  " << line << "\n";
  }
  return out.str();
}

}  // namespace gpool
