// The scheduler: a pure function from a ClusterView to a Plan.
//
// No sockets, clocks, storage or randomness: the same inputs always give the
// same plan, so it runs unchanged in the coordinator, the simulator and the
// benches, and its tests are tables of inputs and expected plans.
//
// This first policy places whole GPUs, CPU milli-cores and memory MiB. Jobs
// are taken by priority (higher first) and, within a priority, in arrival
// order. Each job is all-or-nothing: either every pending task gets a node or
// none does, and a job that does not fit does not block the ones behind it.
// For each task, every node passes a chain of feasibility checks (ready, not
// cordoned, GPUs, CPU, memory); the first failed check is the node's reason.
// Feasible nodes are ranked by binpack (fullest first, to keep whole nodes
// free for large jobs) or spread (emptiest first); ties go to the node listed
// first in the view. A job left pending carries its reasons aggregated over
// nodes ("3 nodes: insufficient GPUs"), so users see why.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"
#include "topology/cluster_view.h"

namespace gpool::scheduler {

enum class Strategy { kBinpack, kSpread };
std::string_view StrategyName(Strategy strategy);
Result<Strategy> StrategyFromName(std::string_view name);

struct SchedulerOptions {
  Strategy strategy = Strategy::kBinpack;
};

struct Placement {
  JobId job;
  uint32_t task_index = 0;
  std::string node;
  std::vector<uint32_t> gpu_indices;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
};

struct PendingReasons {
  JobId job;
  std::vector<std::string> reasons;
};

struct Plan {
  std::vector<Placement> binds;
  std::vector<PendingReasons> pending;  // every job that was considered and not placed
};

Plan Schedule(const topology::ClusterView& view, const SchedulerOptions& options);

}  // namespace gpool::scheduler
