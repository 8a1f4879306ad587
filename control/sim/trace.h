// The Alibaba GPU-sharing trace (cluster-trace-gpu-v2023, "openb"): its
// node list and pod list CSV files, read into plain records for the
// simulator (../shared/data/alibaba-gpu-v2023/README.md describes them).
//
// Columns are found by header name, so the short multigpu files (five
// columns) and the full ones read the same way; a column the file lacks
// takes its default. Every malformed line is an InvalidArgument naming the
// file, line and column ("pods.csv:17: gpu_milli: '12x' is not a number").
// Pure apart from reading the file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/types.h"
#include "topology/cluster_view.h"

namespace gpool::sim {

struct TraceNode {
  std::string name;  // sn
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  uint32_t gpus = 0;
  std::string model;  // "" for CPU-only nodes
  // Set for a node from a gpool node spec file (node_file.h) instead of a
  // trace line: the node whole, as the scheduler sees it (GPU memory, NUMA,
  // links, MIG, labels); the fields above summarize it. SimCluster takes it
  // as it is. Shared: the experiments build a cluster per seed from it.
  std::shared_ptr<const topology::NodeView> view;
};

struct TracePod {
  std::string name;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  uint32_t num_gpu = 0;     // 0, 1, 2, 4 or 8
  uint32_t gpu_milli = 0;   // share of each GPU, 1..1000 (below 1000 only with num_gpu 1)
  std::vector<std::string> gpu_spec;  // allowed models; empty: any
  std::string qos;          // LS, BE, Burstable, Guaranteed; "" when the file has no column
  // Optional columns node_policy and gpu_policy (gpool's, not Alibaba's):
  // the pod's own placement policy, as JobSpec.node_policy / gpu_policy.
  // An empty cell or no column is the default.
  PlacementPolicy node_policy = PlacementPolicy::kDefault;
  PlacementPolicy gpu_policy = PlacementPolicy::kDefault;
  int64_t creation_time = 0;
  int64_t deletion_time = 0;
  int64_t scheduled_time = 0;
};

Result<std::vector<TraceNode>> ParseTraceNodes(std::string_view text, const std::string& source);
Result<std::vector<TracePod>> ParseTracePods(std::string_view text, const std::string& source);
Result<std::vector<TraceNode>> LoadTraceNodes(const std::string& path);
Result<std::vector<TracePod>> LoadTracePods(const std::string& path);

}  // namespace gpool::sim
