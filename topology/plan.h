// A scheduling cycle's outcome, one type from the scheduler to the log: the
// scheduler returns a Plan, the coordinator proposes it as is (the ApplyPlan
// command), and the state machine applies it, re-validating every bind. The
// field names are the log's; entries written by earlier coordinators (pending
// reasons as text) still read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/base/ids.h"
#include "protocol/types.h"
#include "topology/pending_reason.h"

namespace gpool::topology {

// A task placed on a node.
struct Placement {
  JobId job;
  uint32_t task_index = 0;
  std::string node;
  std::vector<uint32_t> gpu_indices;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  DeviceGrant grant;            // shares, MIG instance, cores; empty for whole GPUs
  uint64_t gpu_memory_mib = 0;  // device memory it holds in all (quota "gpu_memory"); not logged
  int32_t numa_node = -1;       // NUMA node its CPU and memory go on (NUMA policies); -1: none
  std::vector<uint32_t> cpu_ids;  // exclusive whole cores it alone holds (Resources::exclusive_cores)

  template <typename V>
  void Fields(V& v) {
    v.Required("job", job);
    v.Required("task", task_index);
    v.Required("node", node);
    v.Optional("gpus", gpu_indices);
    v.Optional("cpu", cpu_milli);
    v.Optional("mem", memory_mib);
    v.Optional("grant", grant);
    v.Optional("numa", numa_node);
    v.Optional("cpu_ids", cpu_ids);
  }
};

// A task to stop. Its resources go to `for_job` (which keeps its claim on
// them until it is placed); the victim goes back to pending.
struct Eviction {
  JobId job;
  uint32_t task_index = 0;
  JobId for_job;
  std::string reason;  // "preempted by job 7 (high)", "reclaimed by queue team-a for job 7"

  template <typename V>
  void Fields(V& v) {
    v.Required("job", job);
    v.Required("task", task_index);
    v.Required("for", for_job);
    v.Optional("reason", reason);
  }
};

// Why a job is still pending: codes, rendered to text at the edge. Entries
// written before codes carry text instead (legacy_reasons, replay only).
struct PendingReasons {
  JobId job;
  std::vector<PendingReason> reasons;
  std::vector<std::string> legacy_reasons;

  template <typename V>
  void Fields(V& v) {
    v.Required("job", job);
    v.Optional("why", reasons);
    v.Optional("reasons", legacy_reasons);
  }
};

struct Plan {
  std::vector<Placement> binds;
  std::vector<Eviction> evictions;
  std::vector<PendingReasons> pending;  // every job that was considered and not placed

  template <typename V>
  void Fields(V& v) {
    v.Optional("binds", binds);
    v.Optional("reasons", pending);
    v.Optional("evictions", evictions);
  }
};

}  // namespace gpool::topology
