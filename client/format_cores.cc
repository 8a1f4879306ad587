#include "client/format_cores.h"

#include <algorithm>

#include "client/format.h"

namespace gpool {

std::string NodeGpusCell(const NodeSummary& node) {
  std::string cell = std::to_string(node.gpus_used) + "/" + std::to_string(node.gpus_total);
  if (node.time_sliced_gpus > 0) {
    cell += " (" + std::to_string(node.time_slices_used) + "/" + std::to_string(node.time_slices) + " slices)";
  }
  return cell;
}

std::string TimeSliceCell(const DeviceSummary& device) {
  if (device.time_slices == 0) return "";
  const auto held = std::count_if(device.tenants.begin(), device.tenants.end(),
                                  [](const DeviceGrantSummary& t) { return t.grant.time_slice; });
  return "time-sliced " + std::to_string(held) + "/" + std::to_string(device.time_slices) + " (no memory isolation)";
}

std::string FormatNumaTable(const NodeSummary& node, std::string_view indent) {
  const bool listed =
      std::any_of(node.numa.begin(), node.numa.end(), [](const NumaSummary& n) { return !n.cpus.empty(); });
  std::vector<std::string> header = {"ID", "CPUS", "MEM(GiB)", "GPUS"};
  if (listed) {
    header.push_back("CPULIST");
    header.push_back("EXCLUSIVE");
  }
  Table table(header);
  for (const auto& n : node.numa) {
    std::vector<std::string> row = {std::to_string(n.id), FormatCores(n.cpu_milli), FormatGiB(n.memory_mib),
                                    FormatIndexRanges(n.gpus)};
    if (listed) {
      row.push_back(Dash(n.cpus));
      row.push_back(n.exclusive_cpus.empty() ? "-" : FormatIndexRanges(n.exclusive_cpus));
    }
    table.AddRow(row);
  }
  return table.Render(indent);
}

}  // namespace gpool
