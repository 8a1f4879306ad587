// Data types shared by several messages: job specs, node specs, resources,
// and the states jobs and tasks move through. Plain structs; see
// docs/protocol.md for field meanings and units.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/ids.h"
#include "protocol/wire.h"

namespace gpool {

// Resource quantities are integers: whole GPUs, milli-CPUs, MiB.
struct Resources {
  uint32_t gpus = 0;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  std::string gpu_model;  // empty: any model; otherwise every GPU must be this model (e.g. "A100")

  template <typename V>
  void Fields(V& v) {
    v.Optional("gpus", gpus);
    v.Optional("cpu_milli", cpu_milli);
    v.Optional("memory_mib", memory_mib);
    v.Optional("gpu_model", gpu_model);
  }
  bool operator==(const Resources&) const = default;
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
  }
  bool operator==(const TaskGroupSpec&) const = default;
};

struct JobSpec {
  std::string name;
  std::string queue = "default";
  int32_t priority = 0;  // order inside a priority class: higher first, FIFO among equals
  std::vector<TaskGroupSpec> tasks;
  // high: may preempt low jobs of its queue, never preempted; medium: neither;
  // low: preemptible.
  std::string priority_class = "medium";
  std::string pool = "public";  // the node pool it runs in: public, pooled or exclusive
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
  }
  bool operator==(const JobSpec&) const = default;
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
  }
  bool operator==(const GpuInfo&) const = default;
};

struct NumaInfo {
  int32_t id = 0;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;

  template <typename V>
  void Fields(V& v) {
    v.Required("id", id);
    v.Optional("cpu_milli", cpu_milli);
    v.Optional("memory_mib", memory_mib);
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

  template <typename V>
  void Fields(V& v) {
    v.Required("name", name);
    v.Optional("hostname", hostname);
    v.Required("cpu_milli", cpu_milli);
    v.Required("memory_mib", memory_mib);
    v.Optional("gpus", gpus);
    v.Optional("numa", numa);
    v.Optional("nics", nics);
    v.Optional("labels", labels);
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

  template <typename V>
  void Fields(V& v) {
    v.Required("name", name);
    v.Optional("parent", parent);
    v.Optional("capability", capability);
    v.Optional("deserved", deserved);
    v.Optional("guarantee", guarantee);
  }
  bool operator==(const QueueSpec&) const = default;
};

enum class JobState : uint8_t { kPending, kRunning, kSucceeded, kFailed, kCancelled };
enum class TaskState : uint8_t { kPending, kBound, kRunning, kSucceeded, kFailed, kCancelled, kLost };
enum class NodeState : uint8_t { kReady, kNotReady };

std::string_view ToString(JobState s);
std::string_view ToString(TaskState s);
std::string_view ToString(NodeState s);
std::optional<JobState> JobStateFromString(std::string_view s);
std::optional<TaskState> TaskStateFromString(std::string_view s);
std::optional<NodeState> NodeStateFromString(std::string_view s);
bool IsTerminal(JobState s);
bool IsTerminal(TaskState s);

}  // namespace gpool
