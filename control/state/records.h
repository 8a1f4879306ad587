// The records the coordinator's state machine owns: nodes, jobs and tasks.
//
// Owned by ClusterState and mutated only by its Apply(); everything else reads
// them. Each record lists its fields once (Fields) so snapshots pack and
// restore them with the same code that the wire protocol uses.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "protocol/base/ids.h"
#include "protocol/types.h"

namespace gpool::state {

struct TaskRecord {
  TaskId id;
  uint32_t group = 0;  // index into the job spec's task groups
  TaskState state = TaskState::kPending;
  std::string node;
  std::vector<uint32_t> gpu_indices;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  int64_t pid = 0;
  int32_t exit_code = 0;
  int32_t signal = 0;
  int64_t bind_ms = 0;
  int64_t start_ms = 0;
  int64_t finish_ms = 0;
  bool stop_requested = false;  // cancel or job failure: the dispatcher preempts it
  uint32_t stop_grace_ms = 0;   // 0: the coordinator's default grace
  // Stopped to make room for job `evicted_for` (preemption or reclaim): when
  // it exits it goes back to pending as the next attempt, not to Cancelled.
  bool evicted = false;
  uint64_t evicted_for = 0;
  std::vector<uint64_t> evicted_by;  // every job that ever evicted this task; none may again
  std::string message;
  DeviceGrant grant;  // its share of the GPUs, MIG instance or cores; empty for whole GPUs
  int32_t numa_node = -1;  // the NUMA node its CPU and memory are charged to; -1: none

  template <typename V>
  void Fields(V& v) {
    uint32_t state_wire = static_cast<uint32_t>(state);
    v.Required("id", id);
    v.Required("group", group);
    v.Required("state", state_wire);
    v.Optional("node", node);
    v.Optional("gpus", gpu_indices);
    v.Optional("cpu", cpu_milli);
    v.Optional("mem", memory_mib);
    v.Optional("pid", pid);
    v.Optional("exit", exit_code);
    v.Optional("sig", signal);
    v.Optional("bind_ms", bind_ms);
    v.Optional("start_ms", start_ms);
    v.Optional("finish_ms", finish_ms);
    v.Optional("stop", stop_requested);
    v.Optional("grace_ms", stop_grace_ms);
    v.Optional("evicted", evicted);
    v.Optional("evicted_for", evicted_for);
    v.Optional("evicted_by", evicted_by);
    v.Optional("msg", message);
    v.Optional("grant", grant);
    v.Optional("numa", numa_node);
    state = static_cast<TaskState>(state_wire <= static_cast<uint32_t>(TaskState::kLost) ? state_wire : 0);
  }
};

struct JobRecord {
  JobId id;
  JobSpec spec;
  JobState state = JobState::kPending;
  uint64_t arrival = 0;  // log index of the submission; orders FIFO
  int64_t submit_ms = 0;
  int64_t requeue_ms = 0;  // when an eviction last sent its tasks back to pending
  int64_t start_ms = 0;
  int64_t finish_ms = 0;
  std::string idempotency_key;
  std::vector<TaskRecord> tasks;
  std::vector<std::string> reasons;  // why it is pending, from the last scheduling cycle
  std::string failure;               // why it failed, when it did
  bool cancel_requested = false;
  // Nodes where tasks were evicted for this job; the scheduler keeps them for
  // it until it is placed, or until claim_ms (the last eviction for it, or
  // the last of its victims stopping) is long past.
  std::vector<std::string> claimed_nodes;
  int64_t claim_ms = 0;

  template <typename V>
  void Fields(V& v) {
    uint64_t id_value = id.value();
    uint32_t state_wire = static_cast<uint32_t>(state);
    v.Required("id", id_value);
    v.Required("spec", spec);
    v.Required("state", state_wire);
    v.Optional("arrival", arrival);
    v.Optional("submit_ms", submit_ms);
    v.Optional("requeue_ms", requeue_ms);
    v.Optional("start_ms", start_ms);
    v.Optional("finish_ms", finish_ms);
    v.Optional("key", idempotency_key);
    v.Optional("tasks", tasks);
    v.Optional("reasons", reasons);
    v.Optional("failure", failure);
    v.Optional("cancel", cancel_requested);
    v.Optional("claimed_nodes", claimed_nodes);
    v.Optional("claim_ms", claim_ms);
    id = JobId(id_value);
    state = static_cast<JobState>(state_wire <= static_cast<uint32_t>(JobState::kCancelled) ? state_wire : 0);
  }
};

struct QueueRecord {
  QueueSpec spec;
  template <typename V>
  void Fields(V& v) {
    v.Required("spec", spec);
  }
};

struct NodeRecord {
  NodeSpec spec;
  NodeState state = NodeState::kReady;
  bool cordoned = false;
  std::string pool = "public";                      // public, pooled or exclusive
  std::map<std::string, std::string> admin_labels;  // the operator's; overlay spec.labels
  std::map<std::string, std::string> taints;
  int64_t registered_ms = 0;
  int64_t last_seen_ms = 0;  // wall time of the last state change committed for it
  // gpu index -> task holding it whole; absent means not held whole.
  std::map<uint32_t, TaskId> gpu_owner;
  // gpu index -> tasks holding a share, a MIG instance or cores of it.
  std::map<uint32_t, std::set<TaskId>> gpu_tenants;
  uint64_t cpu_milli_used = 0;
  uint64_t memory_mib_used = 0;
  std::set<TaskId> tasks;  // tasks bound or running here

  template <typename V>
  void Fields(V& v) {
    uint32_t state_wire = static_cast<uint32_t>(state);
    std::vector<uint32_t> owned_gpus;
    std::vector<TaskId> owners;
    for (const auto& [gpu, task] : gpu_owner) {
      owned_gpus.push_back(gpu);
      owners.push_back(task);
    }
    std::vector<TaskId> task_list(tasks.begin(), tasks.end());
    std::vector<uint32_t> tenant_gpus;
    std::vector<TaskId> tenants;
    for (const auto& [gpu, holders] : gpu_tenants) {
      for (const auto& task : holders) {
        tenant_gpus.push_back(gpu);
        tenants.push_back(task);
      }
    }
    v.Required("spec", spec);
    v.Required("state", state_wire);
    v.Optional("cordoned", cordoned);
    v.Optional("pool", pool);
    v.Optional("admin_labels", admin_labels);
    v.Optional("taints", taints);
    v.Optional("registered_ms", registered_ms);
    v.Optional("last_seen_ms", last_seen_ms);
    v.Optional("owned_gpus", owned_gpus);
    v.Optional("owners", owners);
    v.Optional("cpu_used", cpu_milli_used);
    v.Optional("mem_used", memory_mib_used);
    v.Optional("tasks", task_list);
    v.Optional("tenant_gpus", tenant_gpus);
    v.Optional("tenants", tenants);
    state = state_wire == 1 ? NodeState::kNotReady : NodeState::kReady;
    gpu_owner.clear();
    for (size_t i = 0; i < owned_gpus.size() && i < owners.size(); ++i) gpu_owner[owned_gpus[i]] = owners[i];
    tasks = std::set<TaskId>(task_list.begin(), task_list.end());
    gpu_tenants.clear();
    for (size_t i = 0; i < tenant_gpus.size() && i < tenants.size(); ++i) gpu_tenants[tenant_gpus[i]].insert(tenants[i]);
  }
};

}  // namespace gpool::state
