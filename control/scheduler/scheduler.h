// The scheduler: a pure function from a ClusterView to a Plan.
//
// No sockets, clocks, storage or randomness: the same inputs always give the
// same plan, so it runs unchanged in the coordinator, the simulator and the
// benches, and its tests are tables of inputs and expected plans.
//
// A cycle runs the actions its SchedulerConfig lists (see config.h) over one
// working copy of the cluster, so each action sees what the ones before it
// placed or evicted. The plan carries binds (placements to commit), evictions
// (tasks to stop so a preemptor or reclaiming queue can run; the victims are
// requeued) and, for every job left waiting, its reasons aggregated over
// nodes and queues ("12 nodes: insufficient GPUs", "queue team-a at
// capability for gpu (16 of 16)").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"
#include "control/scheduler/config.h"
#include "topology/cluster_view.h"
#include "topology/pending_reason.h"

namespace gpool::scheduler {

struct Placement {
  JobId job;
  uint32_t task_index = 0;
  std::string node;
  std::vector<uint32_t> gpu_indices;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  DeviceGrant grant;            // shares, MIG instance; empty for whole GPUs
  uint64_t gpu_memory_mib = 0;  // device memory it holds in all (quota "gpu_memory")
  int32_t numa_node = -1;       // NUMA node its CPU and memory go on (NUMA policies); -1: none
};

// A task to stop. Its resources go to `for_job` (which keeps its claim on
// them until it is placed); the victim goes back to pending.
struct Eviction {
  JobId job;
  uint32_t task_index = 0;
  JobId for_job;
  std::string reason;  // "preempted by job 7 (high)", "reclaimed by queue team-a for job 7"
};

struct PendingReasons {
  JobId job;
  std::vector<topology::PendingReason> reasons;  // codes; rendered to text at the edge
};

struct Plan {
  std::vector<Placement> binds;
  std::vector<Eviction> evictions;
  std::vector<PendingReasons> pending;  // every job that was considered and not placed
};

Plan Schedule(const topology::ClusterView& view, const SchedulerConfig& config);

}  // namespace gpool::scheduler
