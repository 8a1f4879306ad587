// ClusterView: an immutable, scheduler-facing picture of the cluster.
//
// Built by the coordinator from its state machine (or by the simulator and
// benches from synthetic data) and handed to the pure scheduler. Holds only
// what placement needs: per-node capacity and what is free right now, and the
// jobs waiting for placement in arrival order. No ids from control/ leak in,
// so the scheduler, simulator and benches share it without pulling in the
// coordinator. Plain values; safe to copy and read from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/ids.h"
#include "protocol/types.h"

namespace gpool::topology {

// A MIG instance on a GPU: one that exists (static MIG) or one created for
// a tenant (dynamic MIG).
struct MigSlot {
  std::string profile;
  uint32_t start = 0;
  bool used = false;
};

struct GpuSlot {
  uint32_t index = 0;
  std::string model;
  uint64_t memory_mib = 0;
  bool healthy = true;
  bool allocated = false;              // held whole by one task
  int32_t numa = -1;                   // -1: unknown
  std::vector<uint32_t> nvlink_peers;  // GPU indices it has NVLink to
  std::string vendor = "nvidia";
  std::string uuid;
  int32_t link_group = -1;  // vendor link domain (HCCS ring, MetaX zone); -1 unknown
  uint32_t cores = 0;       // addressable cores (NeuronCores)
  // What its sharing tenants hold (none while allocated whole).
  uint32_t tenants = 0;
  uint64_t memory_used_mib = 0;
  uint32_t compute_used_pct = 0;
  std::string qos;                 // of its first tenant asking less than 100 % compute; "" none
  std::vector<bool> cores_used;    // per core, when cores > 0
  std::string mig_mode;            // "", "static" or "dynamic"
  bool mig_enabled = false;        // MIG mode on now: only MIG instances run on it
  std::vector<MigSlot> mig;        // its MIG instances
  // Advertised as this many time-sliced replicas (GpuInfo::time_slices);
  // 0 or 1: not time-sliced. `tenants` counts the replicas held.
  uint32_t time_slices = 0;
  bool TimeSliced() const { return time_slices >= 2; }
};

// One NUMA node of a node: what its CPUs and memory hold free.
struct NumaSlot {
  int32_t id = 0;
  uint64_t cpu_milli_total = 0;
  uint64_t cpu_milli_free = 0;
  uint64_t memory_mib_total = 0;
  uint64_t memory_mib_free = 0;
  // Its CPU ids that no task holds as exclusive whole cores (sorted); empty
  // when the node's spec lists no cpulist for it (no exclusive cores here).
  std::vector<uint32_t> cpu_ids_free;
};

struct NodeView {
  std::string name;
  bool ready = true;
  bool cordoned = false;
  std::string pool = "public";  // public, pooled or exclusive
  std::string pool_queue;       // the queue owning an exclusive node ("" for none)
  uint64_t cpu_milli_total = 0;
  uint64_t cpu_milli_free = 0;
  uint64_t memory_mib_total = 0;
  uint64_t memory_mib_free = 0;
  std::vector<GpuSlot> gpus;
  std::vector<NumaSlot> numa;  // empty: the node reported no NUMA layout
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> taints;  // only jobs tolerating every one are placed here

  uint32_t FreeGpus() const;
  uint32_t UsableGpus() const;  // healthy GPUs, allocated or not
};

// The vocabulary is protocol's (names to and from strings there).
using gpool::NetworkMode;
using gpool::NumaPolicy;
using gpool::PlacementPolicy;
using gpool::PriorityClass;

struct PendingTask {
  uint32_t index = 0;
  uint32_t group = 0;  // index into PendingJob::groups
  Resources resources;
};

// Gang rule of one task group: at least `min` of its replicas must be bound
// or running for the job to run; `active` of them already are.
struct GroupRule {
  uint32_t min = 1;
  uint32_t active = 0;
  uint32_t network_tier = 0;  // its tasks under one switch of this tier; 0: the job's rule only
};

// Placement over the switch tree (NetworkMode): nodes carry their switches
// as labels "topology.gpool.io/tier1" (leaf), "topology.gpool.io/tier2"
// (spine), ...
std::string TierLabel(uint32_t tier);

// A job with tasks waiting for placement: a new job (nothing active yet, so
// every group's minimum must be placed at once), or a running elastic job
// (or one with evicted tasks) whose remaining tasks may be placed one by one.
struct PendingJob {
  JobId id;
  int32_t priority = 0;
  uint64_t arrival = 0;  // submission order; lower came first
  std::string queue;
  PriorityClass priority_class = PriorityClass::kMedium;
  std::string pool = "public";
  std::string user;
  std::map<std::string, std::string> node_selector;
  std::map<std::string, std::string> prefer_labels;
  std::vector<std::string> tolerations;  // "key" or "key=value"
  NumaPolicy numa_policy = NumaPolicy::kNone;
  // The job's own placement policy (JobSpec.node_policy / gpu_policy):
  // kDefault follows the scheduler's configured strategy.
  PlacementPolicy node_policy = PlacementPolicy::kDefault;
  PlacementPolicy gpu_policy = PlacementPolicy::kDefault;
  NetworkMode network_mode = NetworkMode::kNone;
  uint32_t network_tier = 1;
  std::vector<std::string> gpu_uuid_allow;  // empty: any device
  std::vector<std::string> gpu_uuid_deny;
  std::vector<GroupRule> groups;         // empty: one group, all tasks required
  std::vector<PendingTask> tasks;        // the tasks still to place
  int64_t waiting_ms = 0;                // since it was submitted or last requeued
  int64_t max_runtime_ms = 0;            // how long each task may run; 0: no limit
  // Nodes where tasks were evicted for it: nobody else is placed there until
  // it is (or the claim lapses), so what its victims free stays its own.
  std::vector<std::string> claimed_nodes;

  bool Started() const;  // some task is already bound or running
};

// A task holding resources: what preempt and reclaim may choose victims from.
struct RunningTask {
  JobId job;
  uint32_t task_index = 0;
  uint32_t group = 0;
  std::string queue;
  std::string user;
  PriorityClass priority_class = PriorityClass::kMedium;
  int32_t priority = 0;
  std::string node;
  uint32_t gpus = 0;
  std::string gpu_model;  // the model of the GPUs it holds ("" when none)
  uint64_t gpu_memory_mib = 0;  // device memory it holds: shares' sizes, or whole devices' memory
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  int64_t bind_order = 0;   // larger: placed more recently (evicted first among equals)
  uint32_t group_min = 1;   // its group's gang minimum
  uint32_t group_active = 1;  // bound or running replicas of its group
  bool stopping = false;      // already being stopped (cancel, failure or eviction)
  uint64_t stopping_for = 0;  // the job whose preemption or reclaim stops it; 0: none
  std::vector<uint64_t> evicted_by;  // jobs that evicted this task before; they never evict it again
  int64_t remaining_ms = -1;  // until its job's max_runtime stops it; -1: no limit (its end is unknown)
};

struct QueueView {
  std::string name;
  std::string parent;  // empty for root
  Quota capability;
  Quota deserved;
  Quota guarantee;
  std::vector<std::string> pools;  // node pools its jobs may run in; empty: any
  // Its preemption policy (QueueSpec): the classes of its jobs that may
  // preempt its low work, and whether other queues may reclaim that work.
  std::vector<PriorityClass> preempting_classes = {PriorityClass::kHigh, PriorityClass::kSystem};
  bool low_reclaimable = true;
};

// A task shape the cluster expects to see, with how often it comes: the
// "target workload" fragmentation-aware placement keeps room for.
struct WorkloadShape {
  uint32_t gpus = 0;           // 0: CPU-only
  uint32_t gpu_milli = 1000;   // per GPU, in thousandths of a device; 1000: whole GPUs
  uint64_t cpu_milli = 0;
  std::string gpu_model;       // as Resources::gpu_model: "" any, or models separated by '|'
  double weight = 0;           // its share of tasks; the shapes' weights sum to at most 1
  uint64_t memory_mib = 0;     // host memory (the mean over the tasks of this shape)
};

struct ClusterView {
  std::vector<NodeView> nodes;
  std::vector<PendingJob> pending;
  std::vector<RunningTask> running;
  std::vector<QueueView> queues;  // empty: one unlimited queue per name used
  // Empty: fragmentation-aware placement takes the shapes of the running
  // and pending tasks (see scheduler/fragmentation.h).
  std::vector<WorkloadShape> workload;
};

}  // namespace gpool::topology
