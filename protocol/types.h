// Data types shared by several messages: job specs, node specs, resources,
// and the states jobs and tasks move through. Plain structs; see
// docs/protocol.md for field meanings and units.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/enum_names.h"
#include "protocol/base/ids.h"
#include "protocol/base/status.h"
#include "protocol/scale_rule.h"
#include "protocol/session_types.h"

namespace gpool {

// Resource quantities are integers: whole GPUs, milli-CPUs, MiB.
struct Resources {
  uint32_t gpus = 0;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  // Empty: any model; otherwise every GPU must be of one of the models
  // listed, separated by '|' ("A100" or "V100M16|V100M32").
  std::string gpu_model;
  // GPU sharing: with any of these set, each of the `gpus` GPUs is a share
  // of a device that other tasks may share too, instead of a whole device.
  uint64_t gpu_memory_mib = 0;   // memory of each GPU share
  uint32_t gpu_memory_pct = 0;   // or a percentage of the device's memory, resolved to MiB at placement
  uint32_t gpu_compute_pct = 0;  // compute of each share in 1 % steps; 0 reserves none (best effort)
  // How shares of one device divide compute: best-effort (no limit),
  // fixed-share (capped at gpu_compute_pct), burst-share (guaranteed
  // gpu_compute_pct, may use idle compute). A device takes only tasks of the
  // QoS of its first tenant; a task asking for 100 % compute is exempt.
  std::string sharing_qos;
  // MIG: "" none; a profile ("1g.10gb") on GPUs with static or dynamic MIG;
  // "auto": the smallest profile of the GPU model holding gpu_memory_mib and
  // gpu_compute_pct (dynamic MIG).
  std::string mig_profile;
  // Core-level request on devices with addressable cores (AWS NeuronCores):
  // this many cores instead of `gpus` devices.
  uint32_t cores = 0;
  // Whole host cores for the task alone (a static CPU manager): cpu_milli
  // must be a multiple of 1000; the scheduler hands out that many CPU ids
  // of the node's NUMA inventory that no other task holds, and the worker
  // confines the task to them with a cpuset cgroup (not sched_setaffinity,
  // which the task could undo).
  bool exclusive_cores = false;

  // A share of a device rather than whole devices (not MIG, not cores).
  bool Shared() const {
    return mig_profile.empty() && cores == 0 &&
           (gpu_memory_mib > 0 || gpu_memory_pct > 0 || (gpu_compute_pct > 0 && gpu_compute_pct < 100));
  }
  bool Mig() const { return !mig_profile.empty(); }
  // Whole devices only: no share, no MIG instance, no cores.
  bool Whole() const { return !Shared() && !Mig() && cores == 0; }

  template <typename V>
  void Fields(V& v) {
    v.Optional("gpus", gpus);
    v.Optional("cpu_milli", cpu_milli);
    v.Optional("memory_mib", memory_mib);
    v.Optional("gpu_model", gpu_model);
    v.Optional("gpu_memory_mib", gpu_memory_mib);
    v.Optional("gpu_memory_pct", gpu_memory_pct);
    v.Optional("gpu_compute_pct", gpu_compute_pct);
    v.Optional("sharing_qos", sharing_qos);
    v.Optional("mig_profile", mig_profile);
    v.Optional("cores", cores);
    v.Optional("exclusive_cores", exclusive_cores);
  }
  bool operator==(const Resources&) const = default;
};

// Whether a GPU of `model` satisfies a Resources::gpu_model request
// (empty: any; else one of its '|'-separated models).
inline bool GpuModelAllowed(std::string_view allowed, std::string_view model) {
  if (allowed.empty()) return true;
  while (true) {
    const size_t bar = allowed.find('|');
    if (allowed.substr(0, bar) == model) return true;
    if (bar == std::string_view::npos) return false;
    allowed.remove_prefix(bar + 1);
  }
}

// What a placed task holds of its devices beyond their indices: a share of
// each (fractional GPUs), a MIG instance, or cores. Empty for whole devices.
struct DeviceGrant {
  bool shared = false;           // each GPU is a share of a device other tasks may share
  uint64_t gpu_memory_mib = 0;   // per GPU share, resolved (percentages become MiB)
  uint32_t gpu_compute_pct = 0;  // per GPU share; 0: no compute reserved
  std::string sharing_qos;       // best-effort, fixed-share or burst-share
  std::string mig_profile;       // the MIG instance (a MIG task has one GPU)
  uint32_t mig_start = 0;
  std::vector<uint32_t> cores;   // node-wide core ids (core-level requests)
  // One of the time-sliced replicas of a GPU its node advertises as several
  // (GpuInfo::time_slices): best-effort work with no memory isolation.
  bool time_slice = false;

  bool Empty() const { return !shared && mig_profile.empty() && cores.empty() && !time_slice; }
  template <typename V>
  void Fields(V& v) {
    v.Optional("shared", shared);
    v.Optional("gpu_memory_mib", gpu_memory_mib);
    v.Optional("gpu_compute_pct", gpu_compute_pct);
    v.Optional("sharing_qos", sharing_qos);
    v.Optional("mig_profile", mig_profile);
    v.Optional("mig_start", mig_start);
    v.Optional("cores", cores);
    v.Optional("time_slice", time_slice);
  }
  bool operator==(const DeviceGrant&) const = default;
};

// One group of identical tasks (replicas) inside a job.
struct TaskGroupSpec {
  std::string name = "task";
  uint32_t replicas = 1;
  std::vector<std::string> command;  // argv; command[0] is looked up in PATH
  std::map<std::string, std::string> env;
  Resources resources;
  // Gang rule of the group: the job starts only when at least this many of
  // its replicas can start together. 0 means all of them. Fewer than
  // `replicas` makes the group elastic: the rest grow into idle capacity
  // and are the first to be taken back.
  uint32_t min_replicas = 0;
  // With a job network_mode: the group's tasks stay under one switch of this
  // tier or lower (e.g. a tensor-parallel group under one leaf while the job
  // spans a spine). 0: only the job's rule applies.
  uint32_t network_tier = 0;
  // Elastic scaling by signal (protocol/scale_rule.h): with rules, the group
  // runs a target between its minimum and `replicas` that the rules move.
  ScaleSpec scale;

  uint32_t MinReplicas() const { return min_replicas == 0 || min_replicas > replicas ? replicas : min_replicas; }
  template <typename V>
  void Fields(V& v) {
    v.Optional("name", name);
    v.Optional("replicas", replicas);
    v.Required("command", command);
    v.Optional("env", env);
    v.Optional("resources", resources);
    v.Optional("min_replicas", min_replicas);
    v.Optional("network_tier", network_tier);
    v.Optional("scale", scale);
  }
  bool operator==(const TaskGroupSpec&) const = default;
};

// A job's restart policy: "never" (a lost or failed task fails the job),
// "on-node-loss" (the default: tasks lost with their node are requeued as
// their next attempt), "on-failure" (also tasks that exit non-zero). At most
// `max_attempts` requeues per job; a gang is requeued whole, an elastic job
// above its minimum requeues only the lost replicas and keeps running.
struct RestartSpec {
  std::string policy = "on-node-loss";
  uint32_t max_attempts = 3;
  template <typename V>
  void Fields(V& v) {
    v.Optional("policy", policy);
    v.Optional("max_attempts", max_attempts);
  }
  bool operator==(const RestartSpec&) const = default;
};

struct JobSpec {
  std::string name;
  std::string queue = "default";
  int32_t priority = 0;  // order inside a priority class: higher first, FIFO among equals
  std::vector<TaskGroupSpec> tasks;
  // high: may preempt low jobs of its queue, never preempted; medium: neither;
  // low: preemptible.
  std::string priority_class = "medium";
  // The node pool it runs in: public, pooled or exclusive. Empty: chosen at
  // submit, pooled for a job asking for GPU shares or MIG instances when the
  // cluster has pooled nodes (where sharing belongs), else public.
  std::string pool;
  std::string user;             // for fairness between users of a queue; the CLI sends $USER
  std::map<std::string, std::string> node_selector;  // nodes must carry every one of these labels
  std::map<std::string, std::string> prefer_labels;  // nodes carrying these score higher
  std::vector<std::string> tolerations;              // taints it accepts: "key" or "key=value"
  // none: GPUs anywhere on the node; best-effort: on one NUMA node when
  // possible; single-numa-node: on one NUMA node or not on that node at all.
  std::string numa_policy = "none";
  // Network placement over the switch tree (node labels
  // topology.gpool.io/tier1 = leaf switch, tier2 = spine, ...):
  // none; best-effort: the lowest tier whose one switch holds the job, else
  // anywhere; single-switch: under one switch of tier network_tier or lower,
  // else wait.
  std::string network_mode = "none";
  uint32_t network_tier = 1;
  // Per-job placement policy (PlacementPolicy): "default" (the cluster's
  // strategy, fragmentation-aware unless configured otherwise), "binpack"
  // (fullest node / fullest device first) or "spread" (emptiest first).
  // node_policy picks the node; gpu_policy the device a GPU share lands on.
  std::string node_policy = "default";
  std::string gpu_policy = "default";
  // Device UUIDs the job may use (empty: any) and may not use.
  std::vector<std::string> gpu_uuid_allow;
  std::vector<std::string> gpu_uuid_deny;
  // SIGTERM to SIGKILL when the coordinator stops its tasks without a grace
  // of its own (eviction, health drain, a cancel with grace 0, the rest of a
  // failed gang); 0: the coordinator's --preempt-grace-ms. At most the
  // coordinator's --max-grace-period-ms.
  uint32_t grace_period_ms = 0;
  // How long each task may run; 0: no limit. The worker stops a task that
  // reaches it (SIGTERM, the grace above, SIGKILL; reason "time limit"), and
  // the scheduler lets a job with one run on nodes held for a starving job
  // when it ends before they are expected to be free (backfill).
  uint64_t max_runtime_ms = 0;
  // What happens when a task is lost with its node or fails (RestartSpec).
  RestartSpec restart;
  // An rGPU session (protocol/session_types.h); disabled for every other job.
  SessionSpec session;

  uint32_t TotalTasks() const;
  template <typename V>
  void Fields(V& v) {
    v.Required("name", name);
    v.Optional("queue", queue);
    v.Optional("priority", priority);
    v.Required("tasks", tasks);
    v.Optional("priority_class", priority_class);
    v.Optional("pool", pool);
    v.Optional("user", user);
    v.Optional("node_selector", node_selector);
    v.Optional("prefer_labels", prefer_labels);
    v.Optional("tolerations", tolerations);
    v.Optional("numa_policy", numa_policy);
    v.Optional("network_mode", network_mode);
    v.Optional("network_tier", network_tier);
    v.Optional("node_policy", node_policy);
    v.Optional("gpu_policy", gpu_policy);
    v.Optional("gpu_uuid_allow", gpu_uuid_allow);
    v.Optional("gpu_uuid_deny", gpu_uuid_deny);
    v.Optional("restart", restart);
    v.Optional("grace_period_ms", grace_period_ms);
    v.Optional("max_runtime_ms", max_runtime_ms);
    v.Optional("session", session);
  }
  bool operator==(const JobSpec&) const = default;
};

// A MIG instance that exists on a GPU (static MIG, as discovered).
struct MigDeviceInfo {
  std::string profile;  // "1g.10gb"
  uint32_t start = 0;   // placement start (memory slice)
  std::string uuid;     // "MIG-..."

  template <typename V>
  void Fields(V& v) {
    v.Required("profile", profile);
    v.Optional("start", start);
    v.Optional("uuid", uuid);
  }
  bool operator==(const MigDeviceInfo&) const = default;
};

struct GpuInfo {
  uint32_t index = 0;  // index on the node, as CUDA_VISIBLE_DEVICES counts
  std::string uuid;
  std::string vendor = "nvidia";
  std::string model;
  uint64_t memory_mib = 0;
  int32_t numa = -1;  // -1: unknown
  std::vector<uint32_t> nvlink_peers;
  bool healthy = true;
  uint32_t compute_units = 0;  // SMs / AI cores; 0 unknown
  int32_t link_group = -1;     // vendor link domain (Ascend HCCS ring, MetaX zone); -1 unknown
  uint32_t cores = 0;          // addressable cores (AWS NeuronCores); 0: not core-addressable
  // MIG: "" off; "static": the instances below exist and are handed out as
  // they are; "dynamic": the scheduler creates instances from the model's
  // profile table, and switches MIG on or off only while the GPU is idle.
  std::string mig_mode;
  std::vector<MigDeviceInfo> mig_instances;
  // MIG mode is on right now, so only MIG instances run on it (a real GPU
  // offered for dynamic MIG; simulated dynamic GPUs switch modes when idle).
  bool mig_enabled = false;
  // Time-slicing (oversubscription): 2 or more advertises the GPU as that
  // many replicas that low-class (best-effort) tasks asking for whole GPUs
  // take one each, taking turns on the device with no memory isolation;
  // work of any other class never runs on it. 0 or 1: an ordinary GPU.
  uint32_t time_slices = 0;

  template <typename V>
  void Fields(V& v) {
    v.Required("index", index);
    v.Required("uuid", uuid);
    v.Optional("vendor", vendor);
    v.Optional("model", model);
    v.Optional("memory_mib", memory_mib);
    v.Optional("numa", numa);
    v.Optional("nvlink_peers", nvlink_peers);
    v.Optional("healthy", healthy);
    v.Optional("compute_units", compute_units);
    v.Optional("link_group", link_group);
    v.Optional("cores", cores);
    v.Optional("mig_mode", mig_mode);
    v.Optional("mig_instances", mig_instances);
    v.Optional("mig_enabled", mig_enabled);
    v.Optional("time_slices", time_slices);
  }
  bool operator==(const GpuInfo&) const = default;
};

struct NumaInfo {
  int32_t id = 0;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  std::string cpus;  // its CPUs as a Linux cpulist ("0-31,64-95"), for pinning tasks

  template <typename V>
  void Fields(V& v) {
    v.Required("id", id);
    v.Optional("cpu_milli", cpu_milli);
    v.Optional("memory_mib", memory_mib);
    v.Optional("cpus", cpus);
  }
  bool operator==(const NumaInfo&) const = default;
};

struct NicInfo {
  std::string name;
  std::string leaf_switch;
  uint32_t speed_gbps = 0;

  template <typename V>
  void Fields(V& v) {
    v.Required("name", name);
    v.Optional("leaf_switch", leaf_switch);
    v.Optional("speed_gbps", speed_gbps);
  }
  bool operator==(const NicInfo&) const = default;
};

// What a worker reports about its node.
struct NodeSpec {
  std::string name;
  std::string hostname;
  uint64_t cpu_milli = 0;   // allocatable CPU
  uint64_t memory_mib = 0;  // allocatable memory
  std::vector<GpuInfo> gpus;
  std::vector<NumaInfo> numa;
  std::vector<NicInfo> nics;
  std::map<std::string, std::string> labels;
  // The pool the node's spec file asks for ("" leaves it to the operator):
  // applied when the node first registers and whenever the file's pool
  // changes; an operator's `gpool node pool` holds until then. pool_queue:
  // the queue that owns it, for an exclusive node.
  std::string pool;
  std::string pool_queue;
  // The IP address other nodes reach this one at (`gpool-worker
  // --advertise-address`): sent with the node's tasks in every gang's hosts
  // file, so no worker looks the hostname up per bind. Empty: they do.
  std::string address;

  template <typename V>
  void Fields(V& v) {
    v.Required("name", name);
    v.Optional("hostname", hostname);
    v.Optional("address", address);
    v.Required("cpu_milli", cpu_milli);
    v.Required("memory_mib", memory_mib);
    v.Optional("gpus", gpus);
    v.Optional("numa", numa);
    v.Optional("nics", nics);
    v.Optional("labels", labels);
    v.Optional("pool", pool);
    v.Optional("pool_queue", pool_queue);
  }
  bool operator==(const NodeSpec&) const = default;
};

// Queue quotas: resource name -> amount. Names: "gpu" (whole GPUs), "cpu"
// (milli-CPU), "memory" (MiB) and "gpu/<model>" (GPUs of one model, e.g.
// "gpu/A100"). A resource a quota does not name is not limited by it.
using Quota = std::map<std::string, uint64_t>;

// A queue in the hierarchy root -> ... -> leaf. Jobs are submitted to leaves.
//   capability  hard maximum of what the queue (with its children) holds
//   deserved    fair share; it may borrow beyond it while others are idle,
//               and borrowed work is reclaimed when an owner wants it back
//   guarantee   what it gets back by reclaim even when deserved shares
//               together exceed the cluster
// guarantee <= deserved <= capability for every resource named by both.
struct QueueSpec {
  std::string name;
  std::string parent = "root";
  Quota capability;
  Quota deserved;
  Quota guarantee;
  // The node pools its jobs (and its descendants') may run in; empty: any.
  std::vector<std::string> pools;
  // Its preemption policy (issue 50; control/scheduler/class_rules.h): the
  // classes of its own jobs that may preempt its low work, a subset of
  // "high" and "system" (empty: none may), and whether other queues may
  // reclaim its low work (false also keeps that work within its deserved
  // share). Both default to the class rule itself; older peers and
  // snapshots, which lack the fields, get the defaults.
  std::vector<std::string> preempting_classes = {"high", "system"};
  bool low_reclaimable = true;

  template <typename V>
  void Fields(V& v) {
    v.Required("name", name);
    v.Optional("parent", parent);
    v.Optional("capability", capability);
    v.Optional("deserved", deserved);
    v.Optional("guarantee", guarantee);
    v.Optional("pools", pools);
    v.Optional("preempting_classes", preempting_classes);
    v.Optional("low_reclaimable", low_reclaimable);
  }
  bool operator==(const QueueSpec&) const = default;
};

// The UUID a task sees for one of its devices: the GPU's, or that of its MIG
// instance (static: as discovered, "" when the layout no longer has it;
// dynamic: "MIG-<gpu uuid>-<profile>-<start>", named by the worker that
// creates it).
std::string DeviceUuid(const GpuInfo& gpu, const DeviceGrant& grant);

enum class JobState : uint8_t { kPending, kRunning, kSucceeded, kFailed, kCancelled };
enum class TaskState : uint8_t { kPending, kBound, kRunning, kSucceeded, kFailed, kCancelled, kLost };
// Ready; NotReady (silent past the node timeout, its tasks still counted as
// running); Lost (silent past the longer grace: its tasks are lost and
// requeued, its devices free) until it registers again.
enum class NodeState : uint8_t { kReady, kNotReady, kLost };
// Where a node belongs: public nodes take whole-device work of anyone, pooled
// nodes are where sharing (fractional GPUs, MIG) is allowed, exclusive nodes
// are taken whole. On the wire and in files: "public", "pooled", "exclusive".
enum class NodePool : uint8_t { kPublic, kPooled, kExclusive };
inline constexpr size_t kNodePoolCount = 3;
// A job's priority class: "low", "medium", "high", "system" (ordered: a
// higher class compares greater). The rule (control/scheduler/class_rules.h):
// high and system may preempt low; low is the only class that may run on
// capacity borrowed beyond its queue's deserved share, so it is the only one
// reclaim and preemption take (with elastic replicas above a minimum);
// system work is placed first and no eviction path touches it.
enum class PriorityClass : uint8_t { kLow, kMedium, kHigh, kSystem };
inline constexpr size_t kPriorityClassCount = 4;
// Where a task's GPUs may sit: "none" (anywhere), "best-effort" (one NUMA
// node if possible), "single-numa-node" (one NUMA node only).
enum class NumaPolicy : uint8_t { kNone, kBestEffort, kSingleNumaNode };
// Placement over the switch tree: "none", "best-effort" (the fewest
// switches), "single-switch" (under one switch of the job's tier).
enum class NetworkMode : uint8_t { kNone, kBestEffort, kSingleSwitch };
// A job's node or GPU placement policy: "default" (the cluster's node-order
// strategy), "binpack" (fullest first), "spread" (emptiest first).
enum class PlacementPolicy : uint8_t { kDefault, kBinpack, kSpread };
// How shares of a GPU split compute: "best-effort", "fixed-share" (capped at
// the share), "burst-share" (guaranteed, may use idle compute).
enum class SharingQos : uint8_t { kBestEffort, kFixedShare, kBurstShare };
// What a worker reports of a task: "started", "exited", "failed" (could not
// be started), "lost" (the node ended it: its lease expired or its
// supervisor died; requeued by the job's restart policy like a node loss).
enum class TaskEventKind : uint8_t { kStarted, kExited, kFailed, kLost };
// RestartSpec.policy: "never", "on-failure", "on-node-loss".
enum class RestartPolicy : uint8_t { kNever, kOnFailure, kOnNodeLoss };

std::string_view ToString(JobState s);
std::string_view ToString(TaskState s);
std::string_view ToString(NodeState s);
std::optional<JobState> JobStateFromString(std::string_view s);
std::optional<TaskState> TaskStateFromString(std::string_view s);
std::optional<NodeState> NodeStateFromString(std::string_view s);
std::string_view ToString(NodePool p);
std::optional<NodePool> NodePoolFromString(std::string_view s);
std::string_view ToString(PriorityClass c);
std::optional<PriorityClass> PriorityClassFromString(std::string_view s);
std::string_view ToString(NumaPolicy p);
std::optional<NumaPolicy> NumaPolicyFromString(std::string_view s);
std::string_view ToString(NetworkMode m);
std::optional<NetworkMode> NetworkModeFromString(std::string_view s);
std::string_view ToString(PlacementPolicy p);
std::optional<PlacementPolicy> PlacementPolicyFromString(std::string_view s);
std::string_view ToString(SharingQos q);
std::optional<SharingQos> SharingQosFromString(std::string_view s);
std::string_view ToString(TaskEventKind k);
std::optional<TaskEventKind> TaskEventKindFromString(std::string_view s);
std::string_view ToString(RestartPolicy p);
std::optional<RestartPolicy> RestartPolicyFromString(std::string_view s);
// The names an enum's values go by, for messages: "none, best-effort or
// single-numa-node". Defined for the enums above.
template <typename E>
std::string Choices();
template <>
std::string Choices<NodePool>();
template <>
std::string Choices<PriorityClass>();
template <>
std::string Choices<NumaPolicy>();
template <>
std::string Choices<NetworkMode>();
template <>
std::string Choices<PlacementPolicy>();
template <>
std::string Choices<SharingQos>();
template <>
std::string Choices<TaskEventKind>();
template <>
std::string Choices<RestartPolicy>();
// InvalidArgument "FIELD: 'VALUE' is not A, B or C" for a value of no name of E.
template <typename E>
Status NotOneOf(std::string_view field, std::string_view value) {
  return Status::InvalidArgument(std::string(field) + ": '" + std::string(value.substr(0, 32)) + "' is not " +
                                 Choices<E>());
}
bool IsTerminal(JobState s);
bool IsTerminal(TaskState s);

// The names these travel by where a message carries them as names (a
// worker's TaskReport.state, TaskEvent.kind, NodeStateCmd.state); records in
// snapshots keep storing their numbers.
template <>
struct EnumNames<TaskState> {
  static constexpr std::array<std::string_view, 7> kNames = {"Pending", "Bound",     "Running", "Succeeded",
                                                             "Failed",  "Cancelled", "Lost"};
};
template <>
struct EnumNames<NodeState> {
  static constexpr std::array<std::string_view, 3> kNames = {"Ready", "NotReady", "Lost"};
};
template <>
struct EnumNames<TaskEventKind> {
  static constexpr std::array<std::string_view, 4> kNames = {"started", "exited", "failed", "lost"};
};

// The node's GPU with this index, or null.
const GpuInfo* FindGpu(const NodeSpec& node, uint32_t index);

}  // namespace gpool
