// gpool-sim's cluster (--nodes FILE): the Alibaba trace's node list CSV
// (trace.h), or a gpool node spec file, the YAML or JSON that gpool-worker
// --spec reads (topology/node_spec_file.h), copied `count` times.
//
// Which one a file is: .csv is a trace; .yaml, .yml and .json are spec
// files; any other name is a spec file when its first line that is not
// blank or a '#' comment starts with '{' or holds a ':' (YAML and JSON
// fields do, a CSV header does not), else a trace.
//
// A spec file's nodes are the ones gpool-worker --simulate N --spec FILE
// registers (topology/fleet_nodes.h: <name>-0001 ... <name>-N, device uuids
// made distinct), and they become the scheduler's NodeViews the way the
// coordinator's do: registered in a state::ClusterState (which also checks
// static MIG layouts) and read back with BuildView. So a simulated node has
// what a registered one has: GPU models, memory and health, NUMA nodes and
// the GPUs' NUMA affinity, NVLink peers, link groups, cores, MIG mode and
// static MIG instances, CPUs, memory and labels. A spec without `name` is
// named after its file ("nodes/h100.yaml" -> "h100-0001", ...).
//
// Trace pods ask for a share of a GPU as thousandths of it, kTraceGpuUnits
// "MiB" of device memory (workload.h). With `trace_gpu_units`, every spec
// GPU's memory becomes kTraceGpuUnits too (after the MIG check, which needs
// the real size), so a pod's share is the same fraction of any device;
// gpool-sim sets it whenever the workload is a trace pod list, and keeps
// the spec's memory for JSONL workloads, which ask in MiB.
//
// The result is TraceNodes, the experiments' input, each spec node whole in
// TraceNode::view. Pure apart from reading the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "control/sim/trace.h"
#include "protocol/base/status.h"
#include "protocol/types.h"

namespace gpool::sim {

enum class NodeFileKind : uint8_t { kTrace, kSpec };

// The most nodes a spec file is copied to (gpool-worker --simulate's limit).
inline constexpr uint32_t kMaxSpecNodes = 10'000;

struct NodeFileOptions {
  // Spec files: how many nodes of the spec (1..kMaxSpecNodes).
  uint32_t count = 1;
  // Spec files: GPU memory in trace units, for trace pod workloads.
  bool trace_gpu_units = false;
};

// By extension, else by content (reads the file's first lines). NotFound or
// IoError when the file cannot be read.
Result<NodeFileKind> DetectNodeFile(const std::string& path);

// The cluster `path` describes, whichever kind it is (options apply to
// spec files). Errors name the file and the line or field.
Result<std::vector<TraceNode>> LoadNodeFile(const std::string& path, const NodeFileOptions& options = {});

// `count` copies of `spec` as simulator nodes; `source` names the spec in
// error messages.
Result<std::vector<TraceNode>> NodesFromSpec(const NodeSpec& spec, const std::string& source,
                                             const NodeFileOptions& options);

}  // namespace gpool::sim
