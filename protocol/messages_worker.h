// Worker channel messages (worker <-> coordinator, port 7401): registration,
// heartbeats, task binds and preemptions, task events and log fetches.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/bytes.h"
#include "protocol/health.h"
#include "protocol/messages_common.h"
#include "protocol/model/run_as.h"
#include "protocol/model/task_report.h"
#include "protocol/types.h"

namespace gpool {

// --- Worker channel --------------------------------------------------------

struct RegisterNode {
  static constexpr MessageType kType = MessageType::kRegisterNode;
  NodeSpec node;
  std::vector<TaskReport> tasks;
  std::string worker_version;
  // The node's health conditions now (health.h); empty: healthy.
  std::vector<HealthCondition> health;
  // A join token (`gpool admin join-token create`): admits a node whose key
  // is not yet bound at once, instead of leaving it pending an admin's
  // approval. Sent until the node is registered; empty: none.
  std::string join_token;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Optional("tasks", tasks);
    v.Optional("worker_version", worker_version);
    v.Optional("health", health);
    v.Optional("join_token", join_token);
  }
};

struct RegisterNodeReply {
  static constexpr MessageType kType = MessageType::kRegisterNodeReply;
  uint32_t heartbeat_interval_ms = 1000;
  std::string coordinator_id;
  // The node's lease: the worker's tasks may run only until lease_ms after
  // it sent the last heartbeat the coordinator acknowledged; past that its
  // task supervisors kill them (docs/architecture.md, "At most one copy").
  // 0: no lease (an older coordinator).
  uint32_t lease_ms = 0;
  // The longest the node may hold its lease, counted the same way, while no
  // replica can acknowledge it (a whole-control-plane outage, an election):
  // the node-loss grace less the margin, so no coordinator, this one or a
  // new leader, requeues the node's tasks before it has stopped them
  // (docs/operations.md 9.3). The worker uses it only then, and only to
  // prolong a lease still in force. 0: none (an older coordinator); the
  // lease is then lease_ms whatever happens.
  uint32_t lease_hold_ms = 0;
  // How many health kinds (protocol/health.h, in order) this coordinator
  // knows: the worker tells it no other (HealthForCoordinator). 0: an older
  // coordinator, which knows kHealthKindsBeforeRepairs.
  uint32_t health_kinds = 0;
  template <typename V>
  void Fields(V& v) {
    v.Optional("heartbeat_interval_ms", heartbeat_interval_ms);
    v.Optional("coordinator_id", coordinator_id);
    v.Optional("lease_ms", lease_ms);
    v.Optional("lease_hold_ms", lease_hold_ms);
    v.Optional("health_kinds", health_kinds);
  }
};

// What a running task uses of its devices, as the worker measured it.
struct TaskUsage {
  TaskId task;
  uint64_t gpu_memory_used_mib = 0;  // summed over its GPUs and processes
  template <typename V>
  void Fields(V& v) {
    v.Required("task", task);
    v.Optional("gpu_memory_used_mib", gpu_memory_used_mib);
  }
  bool operator==(const TaskUsage&) const = default;
};

// How busy one GPU was at the heartbeat's NVML sample (the low-utilisation
// alert). Only GPUs NVML could measure are listed: a missing GPU is unknown.
struct GpuUtilization {
  uint32_t index = 0;
  uint32_t utilization_pct = 0;
  uint64_t memory_used_mib = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("gpu", index);
    v.Optional("util", utilization_pct);
    v.Optional("mem_mib", memory_used_mib);
  }
  bool operator==(const GpuUtilization&) const = default;
};

struct Heartbeat {
  static constexpr MessageType kType = MessageType::kHeartbeat;
  std::string node;
  std::vector<TaskId> running;
  // Device usage of running tasks, where the node can measure it (NVML);
  // empty on simulated nodes and nodes without a driver.
  std::vector<TaskUsage> usage;
  // Health: the whole list of conditions, carried when it changed (a
  // condition raised or cleared, a severity, count or XID changed) until a
  // heartbeat carrying it is acknowledged; health_version then counts the
  // changes (per worker process, from 1). 0: no health in this heartbeat.
  uint64_t health_version = 0;
  std::vector<HealthCondition> health;
  // Completed rounds of the node's health checks (every check ran once), so
  // the coordinator can count clear rounds before it uncordons a node.
  uint64_t health_rounds = 0;
  std::vector<GpuUtilization> gpus;  // NVML nodes only
  // LabelsDigest (labels_digest.h) of the operator's labels the worker
  // holds (the last NodeLabels it took; none yet: the empty map's). The
  // leader sends NodeLabels when it differs from the node's. 0: a worker
  // that does not take them (older, or a simulated fleet).
  uint64_t labels_digest = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Optional("running", running);
    v.Optional("usage", usage);
    v.Optional("health_version", health_version);
    v.Optional("health", health);
    v.Optional("health_rounds", health_rounds);
    v.Optional("gpus", gpus);
    v.Optional("labels_digest", labels_digest);
  }
};

// One node of a gang and how many of the job's tasks it runs: a line of an MPI
// hostfile, sent structured so the worker never parses it back out of text.
struct HostSlots {
  std::string host;
  uint32_t slots = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("host", host);
    v.Required("slots", slots);
  }
};

// One task of a gang by its stable name (GPOOL_TASK_NAME) and the host of
// the node running it: a line of the job's hosts file (hosts(5)), which the
// worker writes after resolving `host` to an address.
struct TaskHost {
  std::string name;
  std::string host;
  uint32_t slots = 1;  // its line in the MPI hostfile (the coordinator sends 1: one rank per task)
  // The node's advertised address (NodeSpec.address), so the worker writes
  // the hosts line without a name lookup; empty: the worker resolves `host`.
  std::string address;
  template <typename V>
  void Fields(V& v) {
    v.Required("name", name);
    v.Required("host", host);
    v.Optional("slots", slots);
    v.Optional("address", address);
  }
  bool operator==(const TaskHost&) const = default;
};

struct BindTask {
  static constexpr MessageType kType = MessageType::kBindTask;
  TaskId task;
  std::string job_name;
  uint32_t num_tasks = 1;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::vector<uint32_t> gpu_indices;
  std::vector<std::string> gpu_uuids;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  // GPU shares: per-GPU memory and compute limits the task's CUDA
  // interception layer enforces; 0: whole GPUs.
  uint64_t gpu_memory_mib = 0;
  uint32_t gpu_compute_pct = 0;
  std::string sharing_qos;
  // MIG instances (one per GPU index): the profile and the placement start.
  std::vector<std::string> mig_profiles;
  std::vector<uint32_t> mig_starts;
  std::vector<uint32_t> cores;      // NeuronCores (node-wide numbering) for core-level tasks
  std::string numa_policy;          // best-effort / single-numa-node: pin to the GPUs' NUMA nodes
  int32_t numa_node = -1;           // the NUMA node its CPU and memory were placed on; -1: none
  // Exclusive whole cores (Resources::exclusive_cores): the CPU ids the
  // task alone holds; the worker confines it to them with a cpuset cgroup.
  std::vector<uint32_t> exclusive_cpus;
  // A placed gang's nodes with their task counts, in NODE_RANK order (what
  // GPOOL_HOSTS spells as text); the worker writes the MPI hostfile from it.
  std::vector<HostSlots> hosts;
  // The job's max_runtime (0: none): the worker stops the task once it has
  // run this long, SIGTERM then SIGKILL after time_limit_grace_ms.
  uint64_t max_runtime_ms = 0;
  uint32_t time_limit_grace_ms = 0;
  // Every task of the gang by stable name with its node's host, in task
  // index order (the worker writes <tasks dir>/<job>.hosts and the MPI
  // hostfile by name from it); empty where `hosts` is.
  std::vector<TaskHost> task_hosts;
  // The identity the task runs as; unset (user empty): the worker's default.
  RunAs run_as;
  // An rGPU session's server instead of `command` (session_types.h).
  RgpuBind rgpu;
  template <typename V>
  void Fields(V& v) {
    v.Required("task", task);
    v.Optional("job_name", job_name);
    v.Required("num_tasks", num_tasks);
    v.Required("command", command);
    v.Optional("env", env);
    v.Optional("gpu_indices", gpu_indices);
    v.Optional("gpu_uuids", gpu_uuids);
    v.Optional("cpu_milli", cpu_milli);
    v.Optional("memory_mib", memory_mib);
    v.Optional("gpu_memory_mib", gpu_memory_mib);
    v.Optional("gpu_compute_pct", gpu_compute_pct);
    v.Optional("sharing_qos", sharing_qos);
    v.Optional("mig_profiles", mig_profiles);
    v.Optional("mig_starts", mig_starts);
    v.Optional("cores", cores);
    v.Optional("numa_policy", numa_policy);
    v.Optional("numa_node", numa_node);
    v.Optional("exclusive_cpus", exclusive_cpus);
    v.Optional("hosts", hosts);
    v.Optional("max_runtime_ms", max_runtime_ms);
    v.Optional("time_limit_grace_ms", time_limit_grace_ms);
    v.Optional("task_hosts", task_hosts);
    v.Optional("run_as", run_as);
    v.Optional("rgpu", rgpu);
  }
};

struct PreemptTask {
  static constexpr MessageType kType = MessageType::kPreemptTask;
  TaskId task;
  uint32_t grace_ms = 10'000;
  std::string reason;
  template <typename V>
  void Fields(V& v) {
    v.Required("task", task);
    v.Optional("grace_ms", grace_ms);
    v.Optional("reason", reason);
  }
};

struct TaskEventAck {
  static constexpr MessageType kType = MessageType::kTaskEventAck;
  uint64_t seq = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("seq", seq);
  }
};

// The labels an operator set on the node (`gpool node label`; the state's
// admin labels), all of them: the worker replaces what it held. It overlays
// them on its spec's labels wherever it reads its own labels (the
// self-repair switches, repair.gpool.io/...). Sent by the leader when a
// heartbeat's labels_digest differs from them; answered with Ack.
struct NodeLabels {
  static constexpr MessageType kType = MessageType::kNodeLabels;
  std::string node;
  std::map<std::string, std::string> labels;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Optional("labels", labels);
  }
};

struct FetchLog {
  static constexpr MessageType kType = MessageType::kFetchLog;
  TaskId task;
  uint32_t max_bytes = 64 * 1024;
  template <typename V>
  void Fields(V& v) {
    v.Required("task", task);
    v.Optional("max_bytes", max_bytes);
  }
};

struct FetchLogReply {
  static constexpr MessageType kType = MessageType::kFetchLogReply;
  wire::Bytes data;  // raw bytes (msgpack bin)
  uint64_t size = 0;
  bool truncated = false;
  uint64_t dropped = 0;  // bytes the node's log cap moved out of the file
  template <typename V>
  void Fields(V& v) {
    v.Required("data", data);
    v.Optional("size", size);
    v.Optional("truncated", truncated);
    v.Optional("dropped", dropped);
  }
};

}  // namespace gpool
