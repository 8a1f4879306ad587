// Every message of the gpool wire protocol, as plain structs.
//
// A message travels inside an Envelope (envelope.h) whose `type` names the
// struct below. Each struct carries its kType so encoding cannot mislabel it.
// docs/protocol.md is the human-readable form of this file; keep them in step.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/types.h"

namespace gpool {

enum class MessageType : uint8_t {
  // Replies usable on any channel.
  kAck,
  kErrorReply,
  // Client API (client -> coordinator, port 7400).
  kSubmitJob,
  kSubmitJobReply,
  kListJobs,
  kListJobsReply,
  kGetJob,
  kGetJobReply,
  kCancelJob,
  kCancelJobReply,
  kListNodes,
  kListNodesReply,
  kGetTaskLog,
  kGetTaskLogReply,
  kClusterStatus,
  kClusterStatusReply,
  // Worker channel (worker <-> coordinator, port 7401).
  kRegisterNode,
  kRegisterNodeReply,
  kHeartbeat,
  kBindTask,
  kPreemptTask,
  kTaskEvent,
  kTaskEventAck,
  kFetchLog,
  kFetchLogReply,
  // Administration (client -> coordinator, port 7400).
  kChangeReplicas,
  kChangeReplicasReply,
  kUpdateNode,
  kUpdateNodeReply,
  kUpdateQueue,
  kUpdateQueueReply,
  kListQueues,
  kListQueuesReply,
  kExplainJob,
  kExplainJobReply,
};

std::string_view MessageTypeName(MessageType type);
std::optional<MessageType> MessageTypeFromName(std::string_view name);

// --- Generic replies -------------------------------------------------------

struct Ack {
  static constexpr MessageType kType = MessageType::kAck;
  void Pack(wire::Packer& p) const { p.BeginMap(0); }
  void Unpack(wire::ObjectReader&) {}
};

struct ErrorReply {
  static constexpr MessageType kType = MessageType::kErrorReply;
  std::string code;     // a StatusCode name, e.g. "InvalidArgument"
  std::string message;  // human-readable; names the offending field where there is one
  std::string leader;   // for NotLeader: the client address of the leader, if known

  static ErrorReply FromStatus(const Status& status, std::string leader = {});
  Status ToStatus() const;
  template <typename V>
  void Fields(V& v) {
    v.Required("code", code);
    v.Required("message", message);
    v.Optional("leader", leader);
  }
};

// --- Client API ------------------------------------------------------------

struct SubmitJob {
  static constexpr MessageType kType = MessageType::kSubmitJob;
  JobSpec spec;
  // Client-chosen; a retried submission with the same key returns the first
  // job's id instead of creating a second job. Empty: no deduplication.
  std::string idempotency_key;
  template <typename V>
  void Fields(V& v) {
    v.Required("spec", spec);
    v.Optional("idempotency_key", idempotency_key);
  }
};

struct SubmitJobReply {
  static constexpr MessageType kType = MessageType::kSubmitJobReply;
  uint64_t job_id = 0;
  bool duplicate = false;  // true when the idempotency key matched an earlier job
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
    v.Optional("duplicate", duplicate);
  }
};

struct ListJobs {
  static constexpr MessageType kType = MessageType::kListJobs;
  bool include_finished = true;
  uint32_t limit = 1000;  // newest jobs first; 0 means all
  template <typename V>
  void Fields(V& v) {
    v.Optional("include_finished", include_finished);
    v.Optional("limit", limit);
  }
};

struct JobSummary {
  uint64_t job_id = 0;
  std::string name;
  std::string queue;
  int32_t priority = 0;
  std::string state;  // JobState name
  uint32_t tasks_total = 0;
  uint32_t tasks_running = 0;
  uint32_t tasks_finished = 0;
  uint32_t gpus = 0;  // GPUs the whole job asks for
  int64_t submit_ms = 0;
  int64_t start_ms = 0;   // 0: not started
  int64_t finish_ms = 0;  // 0: not finished
  std::string reason;     // first pending reason, or the failure reason
  std::string priority_class;  // high, medium or low
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
    v.Required("name", name);
    v.Optional("queue", queue);
    v.Optional("priority", priority);
    v.Required("state", state);
    v.Optional("tasks_total", tasks_total);
    v.Optional("tasks_running", tasks_running);
    v.Optional("tasks_finished", tasks_finished);
    v.Optional("gpus", gpus);
    v.Optional("submit_ms", submit_ms);
    v.Optional("start_ms", start_ms);
    v.Optional("finish_ms", finish_ms);
    v.Optional("reason", reason);
    v.Optional("priority_class", priority_class);
  }
};

struct ListJobsReply {
  static constexpr MessageType kType = MessageType::kListJobsReply;
  std::vector<JobSummary> jobs;
  template <typename V>
  void Fields(V& v) {
    v.Required("jobs", jobs);
  }
};

struct GetJob {
  static constexpr MessageType kType = MessageType::kGetJob;
  uint64_t job_id = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
  }
};

struct TaskInfo {
  uint32_t index = 0;
  uint32_t attempt = 0;
  std::string group;
  std::string state;  // TaskState name
  std::string node;   // empty while pending
  std::vector<uint32_t> gpu_indices;
  std::vector<std::string> gpu_uuids;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  int64_t pid = 0;
  int32_t exit_code = 0;  // valid in Succeeded/Failed
  int32_t signal = 0;     // non-zero when killed by a signal
  int64_t start_ms = 0;
  int64_t finish_ms = 0;
  std::string message;
  DeviceGrant grant;                 // its share of the GPUs, MIG instance or cores; empty: whole GPUs
  int64_t gpu_memory_used_mib = -1;  // as its worker last measured it; -1 unknown
  template <typename V>
  void Fields(V& v) {
    v.Required("index", index);
    v.Optional("attempt", attempt);
    v.Optional("group", group);
    v.Required("state", state);
    v.Optional("node", node);
    v.Optional("gpu_indices", gpu_indices);
    v.Optional("gpu_uuids", gpu_uuids);
    v.Optional("cpu_milli", cpu_milli);
    v.Optional("memory_mib", memory_mib);
    v.Optional("pid", pid);
    v.Optional("exit_code", exit_code);
    v.Optional("signal", signal);
    v.Optional("start_ms", start_ms);
    v.Optional("grant", grant);
    v.Optional("gpu_memory_used_mib", gpu_memory_used_mib);
    v.Optional("finish_ms", finish_ms);
    v.Optional("message", message);
  }
};

struct GetJobReply {
  static constexpr MessageType kType = MessageType::kGetJobReply;
  JobSummary summary;
  JobSpec spec;
  std::vector<TaskInfo> tasks;
  std::vector<std::string> reasons;  // why the job is pending, aggregated over nodes
  template <typename V>
  void Fields(V& v) {
    v.Required("summary", summary);
    v.Required("spec", spec);
    v.Required("tasks", tasks);
    v.Optional("reasons", reasons);
  }
};

struct CancelJob {
  static constexpr MessageType kType = MessageType::kCancelJob;
  uint64_t job_id = 0;
  uint32_t grace_ms = 10'000;  // SIGTERM, then SIGKILL after this long
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
    v.Optional("grace_ms", grace_ms);
  }
};

struct CancelJobReply {
  static constexpr MessageType kType = MessageType::kCancelJobReply;
  uint64_t job_id = 0;
  std::string state;  // the job's state after the cancel was committed
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
    v.Required("state", state);
  }
};

struct ListNodes {
  static constexpr MessageType kType = MessageType::kListNodes;
  // Also fill each node's devices and NUMA nodes (about 200 bytes per GPU:
  // off by default so listing 10,000 nodes stays well inside a frame).
  bool devices = false;
  template <typename V>
  void Fields(V& v) {
    v.Optional("devices", devices);
  }
};

// One GPU of a node, as `gpool nodes --devices` and `gpool node show` list
// it. Built from the node's spec (GpuInfo) and who holds the GPU. Room to
// grow: slices (MIG instances, shares of a GPU) will come as an optional
// list on the device, so a device row keeps its meaning when they do.
// A task's part of a shared device.
struct DeviceGrantSummary {
  std::string task;  // "17.0"
  DeviceGrant grant;
  template <typename V>
  void Fields(V& v) {
    v.Required("task", task);
    v.Optional("grant", grant);
  }
  bool operator==(const DeviceGrantSummary&) const = default;
};

struct DeviceSummary {
  uint32_t index = 0;  // as CUDA_VISIBLE_DEVICES counts
  std::string uuid;
  std::string vendor;
  std::string model;
  uint64_t memory_mib = 0;
  int32_t numa = -1;  // -1: unknown
  bool healthy = true;
  // The NVLink-connected group this GPU is in (LinkGroups below); -1 when it
  // has no NVLink to another GPU of the node.
  int32_t link_group = -1;
  std::vector<uint32_t> nvlink_peers;  // as the worker reported them
  std::string task;                    // the task holding it whole ("17.0", "17.0#2"); "" when not
  std::string mig_mode;                // "", "static" or "dynamic"
  std::vector<DeviceGrantSummary> tenants;  // tasks holding a share, MIG instance or cores of it
  std::vector<MigDeviceInfo> mig_free;      // static MIG instances nobody holds
  template <typename V>
  void Fields(V& v) {
    v.Required("index", index);
    v.Optional("uuid", uuid);
    v.Optional("vendor", vendor);
    v.Optional("model", model);
    v.Optional("memory_mib", memory_mib);
    v.Optional("numa", numa);
    v.Optional("healthy", healthy);
    v.Optional("link_group", link_group);
    v.Optional("nvlink_peers", nvlink_peers);
    v.Optional("task", task);
    v.Optional("mig_mode", mig_mode);
    v.Optional("tenants", tenants);
    v.Optional("mig_free", mig_free);
  }
  bool operator==(const DeviceSummary&) const = default;
};

// One NUMA node of a node: its allocatable CPU and memory, and the GPUs
// (indices) attached to it.
struct NumaSummary {
  int32_t id = 0;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  std::vector<uint32_t> gpus;
  template <typename V>
  void Fields(V& v) {
    v.Required("id", id);
    v.Optional("cpu_milli", cpu_milli);
    v.Optional("memory_mib", memory_mib);
    v.Optional("gpus", gpus);
  }
  bool operator==(const NumaSummary&) const = default;
};

// The NVLink group of each device, in the order given: GPUs a and b are
// linked when either lists the other in nvlink_peers (a link counts from
// either end, so a one-sided report still joins them), and a group is what
// links connect, transitively. Groups are numbered from 0 in the order of
// their lowest GPU index; a GPU with no link to another GPU of the node gets
// -1. Peers that are not GPUs of the node, and a GPU naming itself, are
// ignored.
inline std::vector<int32_t> LinkGroups(const std::vector<DeviceSummary>& devices) {
  const size_t n = devices.size();
  std::map<uint32_t, size_t> position;  // GPU index -> first device with it
  for (size_t i = 0; i < n; ++i) position.emplace(devices[i].index, i);
  std::vector<size_t> parent(n);
  for (size_t i = 0; i < n; ++i) parent[i] = i;
  auto find = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  std::vector<bool> linked(n, false);
  for (size_t i = 0; i < n; ++i) {
    for (uint32_t peer : devices[i].nvlink_peers) {
      auto it = position.find(peer);
      if (it == position.end() || it->second == i || peer == devices[i].index) continue;
      linked[i] = linked[it->second] = true;
      parent[find(i)] = find(it->second);
    }
  }
  // Number the groups by their lowest GPU index.
  std::map<uint32_t, size_t> by_index;  // GPU index -> device, for the linked ones
  for (size_t i = 0; i < n; ++i) {
    if (linked[i]) by_index.emplace(devices[i].index, i);
  }
  std::map<size_t, int32_t> group_of_root;
  for (const auto& [index, i] : by_index) group_of_root.emplace(find(i), static_cast<int32_t>(group_of_root.size()));
  std::vector<int32_t> groups(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (linked[i]) groups[i] = group_of_root.at(find(i));
  }
  return groups;
}

struct NodeSummary {
  std::string name;
  std::string state;  // NodeState name
  std::string hostname;
  uint32_t gpus_total = 0;
  uint32_t gpus_used = 0;
  uint64_t cpu_milli_total = 0;
  uint64_t cpu_milli_used = 0;
  uint64_t memory_mib_total = 0;
  uint64_t memory_mib_used = 0;
  std::vector<std::string> gpu_models;  // distinct models
  uint32_t tasks = 0;
  int64_t last_seen_ms = 0;
  bool cordoned = false;                      // no new tasks are placed here
  std::string pool;                           // public, pooled or exclusive
  std::map<std::string, std::string> labels;  // the spec's, overlaid by the operator's
  std::map<std::string, std::string> taints;  // key -> value ("" for a bare key)
  std::vector<DeviceSummary> devices;         // every GPU, healthy or not, by index
  std::vector<NumaSummary> numa;              // the node's NUMA nodes, as its spec lists them
  template <typename V>
  void Fields(V& v) {
    v.Required("name", name);
    v.Required("state", state);
    v.Optional("cordoned", cordoned);
    v.Optional("pool", pool);
    v.Optional("labels", labels);
    v.Optional("taints", taints);
    v.Optional("hostname", hostname);
    v.Optional("gpus_total", gpus_total);
    v.Optional("gpus_used", gpus_used);
    v.Optional("cpu_milli_total", cpu_milli_total);
    v.Optional("cpu_milli_used", cpu_milli_used);
    v.Optional("memory_mib_total", memory_mib_total);
    v.Optional("memory_mib_used", memory_mib_used);
    v.Optional("gpu_models", gpu_models);
    v.Optional("tasks", tasks);
    v.Optional("last_seen_ms", last_seen_ms);
    v.Optional("devices", devices);
    v.Optional("numa", numa);
  }
};

struct ListNodesReply {
  static constexpr MessageType kType = MessageType::kListNodesReply;
  std::vector<NodeSummary> nodes;
  template <typename V>
  void Fields(V& v) {
    v.Required("nodes", nodes);
  }
};

struct GetTaskLog {
  static constexpr MessageType kType = MessageType::kGetTaskLog;
  uint64_t job_id = 0;
  uint32_t task_index = 0;
  uint32_t max_bytes = 64 * 1024;  // the tail of the log, at most this many bytes
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
    v.Required("task_index", task_index);
    v.Optional("max_bytes", max_bytes);
  }
};

struct GetTaskLogReply {
  static constexpr MessageType kType = MessageType::kGetTaskLogReply;
  wire::Bytes data;  // the tail of the task's stdout+stderr, raw bytes (msgpack bin)
  uint64_t size = 0;  // full size of the log file
  bool truncated = false;
  template <typename V>
  void Fields(V& v) {
    v.Required("data", data);
    v.Optional("size", size);
    v.Optional("truncated", truncated);
  }
};

struct ClusterStatus {
  static constexpr MessageType kType = MessageType::kClusterStatus;
  void Pack(wire::Packer& p) const { p.BeginMap(0); }
  void Unpack(wire::ObjectReader&) {}
};

struct ReplicaInfo {
  std::string id;
  std::string address;
  std::string role;  // "leader" or "follower"
  uint64_t match_index = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("id", id);
    v.Optional("address", address);
    v.Optional("role", role);
    v.Optional("match_index", match_index);
  }
};

struct ClusterStatusReply {
  static constexpr MessageType kType = MessageType::kClusterStatusReply;
  std::string replica_id;
  std::string role;
  uint64_t term = 0;
  uint64_t commit_index = 0;
  uint64_t applied_index = 0;
  std::vector<ReplicaInfo> replicas;
  uint32_t nodes_ready = 0;
  uint32_t nodes_total = 0;
  uint32_t jobs_pending = 0;
  uint32_t jobs_running = 0;
  uint32_t gpus_total = 0;
  uint32_t gpus_used = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("replica_id", replica_id);
    v.Required("role", role);
    v.Optional("term", term);
    v.Optional("commit_index", commit_index);
    v.Optional("applied_index", applied_index);
    v.Optional("replicas", replicas);
    v.Optional("nodes_ready", nodes_ready);
    v.Optional("nodes_total", nodes_total);
    v.Optional("jobs_pending", jobs_pending);
    v.Optional("jobs_running", jobs_running);
    v.Optional("gpus_total", gpus_total);
    v.Optional("gpus_used", gpus_used);
  }
};

// Adds or removes one coordinator replica (a Raft voter). Answered once the
// new configuration is committed. Start an added replica (with --join)
// before adding it: until it answers, the cluster needs one more replica
// for a majority.
struct ChangeReplicas {
  static constexpr MessageType kType = MessageType::kChangeReplicas;
  std::string op;              // "add" or "remove"
  uint64_t replica_id = 0;     // positive
  std::string peer_address;    // add: where the replica listens for peers, e.g. tcp://10.0.0.4:7402
  std::string client_address;  // add: its client endpoint, for redirects; may be empty
  std::string worker_address;  // add: its worker endpoint, for workers' redirects; may be empty
  template <typename V>
  void Fields(V& v) {
    v.Required("op", op);
    v.Required("replica_id", replica_id);
    v.Optional("peer_address", peer_address);
    v.Optional("client_address", client_address);
    v.Optional("worker_address", worker_address);
  }
};

struct ChangeReplicasReply {
  static constexpr MessageType kType = MessageType::kChangeReplicasReply;
  uint64_t index = 0;             // log index of the committed change
  std::vector<uint64_t> voters;   // the configuration it put in force
  template <typename V>
  void Fields(V& v) {
    v.Required("index", index);
    v.Required("voters", voters);
  }
};

// An operator's change to one node. op:
//   "cordon"   place no new tasks here (running ones keep running)
//   "uncordon" place tasks here again
//   "label"    set `labels` and remove the keys in `remove_labels`
//              (operator labels overlay the node spec's and survive
//              re-registration)
//   "pool"     move the node to `pool`: public, pooled or exclusive
//   "taint"    set `taints` and remove the keys in `remove_taints`; only
//              jobs that tolerate every taint of a node are placed there
// Answered with the node as it is once the change is committed.
struct UpdateNode {
  static constexpr MessageType kType = MessageType::kUpdateNode;
  std::string node;
  std::string op;
  std::map<std::string, std::string> labels;
  std::vector<std::string> remove_labels;
  std::string pool;
  std::map<std::string, std::string> taints;
  std::vector<std::string> remove_taints;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Required("op", op);
    v.Optional("labels", labels);
    v.Optional("remove_labels", remove_labels);
    v.Optional("pool", pool);
    v.Optional("taints", taints);
    v.Optional("remove_taints", remove_taints);
  }
};

struct UpdateNodeReply {
  static constexpr MessageType kType = MessageType::kUpdateNodeReply;
  NodeSummary node;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
  }
};

// An operator's change to the queue hierarchy. op:
//   "create"  add `spec` under spec.parent (which must exist)
//   "update"  replace the quotas of queue spec.name (its parent stays)
//   "delete"  remove queue spec.name; it must have no children and no
//             unfinished jobs. "root" and "default" always exist.
// Answered with the queue as it is once the change is committed (for a
// delete, as it was).
struct UpdateQueue {
  static constexpr MessageType kType = MessageType::kUpdateQueue;
  std::string op;
  QueueSpec spec;
  template <typename V>
  void Fields(V& v) {
    v.Required("op", op);
    v.Required("spec", spec);
  }
};

struct QueueSummary {
  QueueSpec spec;
  Quota allocated;  // held by bound and running tasks of it and its descendants
  uint32_t jobs_pending = 0;
  uint32_t jobs_running = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("spec", spec);
    v.Optional("allocated", allocated);
    v.Optional("jobs_pending", jobs_pending);
    v.Optional("jobs_running", jobs_running);
  }
};

struct UpdateQueueReply {
  static constexpr MessageType kType = MessageType::kUpdateQueueReply;
  QueueSummary queue;
  template <typename V>
  void Fields(V& v) {
    v.Required("queue", queue);
  }
};

struct ListQueues {
  static constexpr MessageType kType = MessageType::kListQueues;
  void Pack(wire::Packer& p) const { p.BeginMap(0); }
  void Unpack(wire::ObjectReader&) {}
};

// Parents come before their children; siblings by name.
struct ListQueuesReply {
  static constexpr MessageType kType = MessageType::kListQueuesReply;
  std::vector<QueueSummary> queues;
  template <typename V>
  void Fields(V& v) {
    v.Required("queues", queues);
  }
};

struct ExplainJob {
  static constexpr MessageType kType = MessageType::kExplainJob;
  uint64_t job_id = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
  }
};

// Why a job is where it is: the scheduler's reasons from its latest cycle,
// the job's queue and every ancestor with their quotas and usage, and how
// many jobs of its queue are ahead of it.
struct ExplainJobReply {
  static constexpr MessageType kType = MessageType::kExplainJobReply;
  JobSummary job;
  std::vector<std::string> reasons;
  std::vector<QueueSummary> queue_path;  // leaf first, then its parent, up to root
  uint32_t jobs_ahead = 0;               // pending jobs of the same queue ordered before it
  template <typename V>
  void Fields(V& v) {
    v.Required("job", job);
    v.Optional("reasons", reasons);
    v.Optional("queue_path", queue_path);
    v.Optional("jobs_ahead", jobs_ahead);
  }
};

// --- Worker channel --------------------------------------------------------

// What a worker knows about one of its tasks; sent on registration so a
// restarted coordinator (or a restarted worker) can reconcile.
struct TaskReport {
  TaskId task;
  std::string state;  // "Running" or a terminal TaskState name
  int64_t pid = 0;
  int32_t exit_code = 0;
  int32_t signal = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("task", task);
    v.Required("state", state);
    v.Optional("pid", pid);
    v.Optional("exit_code", exit_code);
    v.Optional("signal", signal);
  }
};

struct RegisterNode {
  static constexpr MessageType kType = MessageType::kRegisterNode;
  NodeSpec node;
  std::vector<TaskReport> tasks;
  std::string worker_version;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Optional("tasks", tasks);
    v.Optional("worker_version", worker_version);
  }
};

struct RegisterNodeReply {
  static constexpr MessageType kType = MessageType::kRegisterNodeReply;
  uint32_t heartbeat_interval_ms = 1000;
  std::string coordinator_id;
  template <typename V>
  void Fields(V& v) {
    v.Optional("heartbeat_interval_ms", heartbeat_interval_ms);
    v.Optional("coordinator_id", coordinator_id);
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

struct Heartbeat {
  static constexpr MessageType kType = MessageType::kHeartbeat;
  std::string node;
  std::vector<TaskId> running;
  // Device usage of running tasks, where the node can measure it (NVML);
  // empty on simulated nodes and nodes without a driver.
  std::vector<TaskUsage> usage;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Optional("running", running);
    v.Optional("usage", usage);
  }
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

// Worker -> coordinator: a task started, exited or could not start. Sent
// until acknowledged with TaskEventAck carrying the same seq.
struct TaskEvent {
  static constexpr MessageType kType = MessageType::kTaskEvent;
  std::string node;
  uint64_t seq = 0;  // per worker process, increasing
  TaskId task;
  std::string kind;  // "started" | "exited" | "failed"
  int64_t pid = 0;
  int32_t exit_code = 0;
  int32_t signal = 0;
  int64_t time_ms = 0;
  std::string message;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Required("seq", seq);
    v.Required("task", task);
    v.Required("kind", kind);
    v.Optional("pid", pid);
    v.Optional("exit_code", exit_code);
    v.Optional("signal", signal);
    v.Optional("time_ms", time_ms);
    v.Optional("message", message);
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
  template <typename V>
  void Fields(V& v) {
    v.Required("data", data);
    v.Optional("size", size);
    v.Optional("truncated", truncated);
  }
};

}  // namespace gpool
