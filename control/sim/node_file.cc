#include "control/sim/node_file.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "control/sim/sim_cluster.h"
#include "control/state/cluster_state.h"
#include "protocol/validate.h"
#include "topology/fleet_nodes.h"
#include "topology/node_spec_file.h"

namespace gpool::sim {
namespace {

// Whether the first line that is not blank or a '#' comment starts with '{'
// or holds a ':', as YAML and JSON fields do and a CSV header does not.
Result<bool> LooksLikeSpec(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    std::string message = path + ": cannot open: " + std::strerror(err);
    return err == ENOENT ? Status::NotFound(message) : Status::IoError(message);
  }
  std::string line;
  while (std::getline(in, line)) {
    const size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos || line[start] == '#') continue;
    return line[start] == '{' || line.find(':') != std::string::npos;
  }
  if (in.bad()) return Status::IoError(path + ": read failed");
  return false;
}

}  // namespace

Result<NodeFileKind> DetectNodeFile(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".csv") return NodeFileKind::kTrace;
  if (ext == ".yaml" || ext == ".yml" || ext == ".json") return NodeFileKind::kSpec;
  GPOOL_ASSIGN_OR_RETURN(bool spec, LooksLikeSpec(path));
  return spec ? NodeFileKind::kSpec : NodeFileKind::kTrace;
}

Result<std::vector<TraceNode>> NodesFromSpec(const NodeSpec& spec, const std::string& source,
                                             const NodeFileOptions& options) {
  if (options.count == 0 || options.count > kMaxSpecNodes) {
    return Status::InvalidArgument(source + ": the node count must be 1.." + std::to_string(kMaxSpecNodes) + ", not " +
                                   std::to_string(options.count));
  }
  auto copies = topology::MakeFleetNodes(spec, "", options.count);
  if (!copies.ok()) return copies.status().WithContext(source);
  // The coordinator's own path from a registration to the scheduler's view.
  state::ClusterState cluster;
  uint64_t index = 0;
  for (NodeSpec& node : *copies) {
    // Validated as the coordinator's node registry does, before the log.
    Status valid = ValidateNodeSpec(node);
    if (valid.ok()) valid = state::ClusterState::CheckMigLayouts(node);
    if (!valid.ok()) return valid.WithContext(source);
    const auto applied = cluster.Apply(++index, state::Command{0, state::RegisterNodeCmd{std::move(node), {}}});
    if (!applied.status.ok()) return applied.status.WithContext(source);
  }
  copies->clear();
  topology::ClusterView view = cluster.BuildView();
  std::vector<TraceNode> nodes;
  nodes.reserve(view.nodes.size());
  for (topology::NodeView& node : view.nodes) {
    if (options.trace_gpu_units) {
      for (auto& gpu : node.gpus) gpu.memory_mib = kTraceGpuUnits;
    }
    TraceNode trace;
    trace.name = node.name;
    trace.cpu_milli = node.cpu_milli_total;
    trace.memory_mib = node.memory_mib_total;
    trace.gpus = static_cast<uint32_t>(node.gpus.size());
    if (!node.gpus.empty()) trace.model = node.gpus.front().model;
    trace.view = std::make_shared<const topology::NodeView>(std::move(node));
    nodes.push_back(std::move(trace));
  }
  return nodes;
}

Result<std::vector<TraceNode>> LoadNodeFile(const std::string& path, const NodeFileOptions& options) {
  GPOOL_ASSIGN_OR_RETURN(NodeFileKind kind, DetectNodeFile(path));
  if (kind == NodeFileKind::kTrace) return LoadTraceNodes(path);
  topology::NodeSpecFileOptions file_options;
  file_options.default_name = std::filesystem::path(path).stem().string();
  GPOOL_ASSIGN_OR_RETURN(NodeSpec spec, topology::LoadNodeSpecFile(path, file_options));
  return NodesFromSpec(spec, path, options);
}

}  // namespace gpool::sim
