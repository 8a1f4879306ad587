// Messages about nodes (client -> coordinator, port 7400): ListNodes with the
// node, device and NUMA summaries it returns (shared by other replies), and
// an operator's UpdateNode.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/event.h"
#include "protocol/health.h"
#include "protocol/messages_common.h"
#include "protocol/model/node_update.h"
#include "protocol/model/probe.h"
#include "protocol/types.h"

namespace gpool {

// --- Listing nodes ---------------------------------------------------------

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
  // Advertised as this many time-sliced replicas for low-class work (no
  // memory isolation); 0: an ordinary GPU. Its tenants hold one each.
  uint32_t time_slices = 0;
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
    v.Optional("time_slices", time_slices);
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
  std::string cpus;                     // its CPU ids as a cpulist ("0-31"), the exclusive cores' inventory
  std::vector<uint32_t> exclusive_cpus;  // CPU ids tasks hold as exclusive whole cores
  template <typename V>
  void Fields(V& v) {
    v.Required("id", id);
    v.Optional("cpu_milli", cpu_milli);
    v.Optional("memory_mib", memory_mib);
    v.Optional("gpus", gpus);
    v.Optional("cpus", cpus);
    v.Optional("exclusive_cpus", exclusive_cpus);
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
  std::string pool_queue;                     // the queue owning it (exclusive nodes; "" for none)
  std::map<std::string, std::string> labels;  // the spec's, overlaid by the operator's
  std::map<std::string, std::string> taints;  // key -> value ("" for a bare key)
  std::vector<DeviceSummary> devices;         // every GPU, healthy or not, by index
  std::vector<NumaSummary> numa;              // the node's NUMA nodes, as its spec lists them
  // Who cordoned it: "operator" or "health" (the health policy lifts only its own).
  std::string cordon_reason;
  std::vector<HealthCondition> health;  // its worker's last reported conditions; empty: healthy
  // GPUs advertised as time-sliced replicas (GpuInfo::time_slices): how
  // many such GPUs, their replicas in all, and the replicas tasks hold. They
  // are in gpus_total too; best-effort (low-class) work only.
  uint32_t time_sliced_gpus = 0;
  uint32_t time_slices = 0;
  uint32_t time_slices_used = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("name", name);
    v.Required("state", state);
    v.Optional("cordoned", cordoned);
    v.Optional("pool", pool);
    v.Optional("pool_queue", pool_queue);
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
    v.Optional("cordon_reason", cordon_reason);
    v.Optional("health", health);
    v.Optional("time_sliced_gpus", time_sliced_gpus);
    v.Optional("time_slices", time_slices);
    v.Optional("time_slices_used", time_slices_used);
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

// --- Administration of nodes -----------------------------------------------

struct UpdateNodeReply {
  static constexpr MessageType kType = MessageType::kUpdateNodeReply;
  NodeSummary node;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
  }
};

// --- Events ----------------------------------------------------------------

// The committed event stream (protocol/event.h), oldest first: events after
// `after_seq` (0: from the oldest kept), of one node or one job when given,
// at most `limit` (the coordinator caps it at 1000). A reader that follows
// asks again with the reply's last_seq.
struct ListEvents {
  static constexpr MessageType kType = MessageType::kListEvents;
  uint64_t after_seq = 0;
  std::string node;
  uint64_t job = 0;
  uint32_t limit = 100;
  template <typename V>
  void Fields(V& v) {
    v.Optional("after_seq", after_seq);
    v.Optional("node", node);
    v.Optional("job", job);
    v.Optional("limit", limit);
  }
};

struct ListEventsReply {
  static constexpr MessageType kType = MessageType::kListEventsReply;
  std::vector<ClusterEvent> events;
  // The seq of the last event examined (matching or not): where the next
  // request continues; the stream's last seq when nothing is left.
  uint64_t last_seq = 0;
  uint64_t first_kept_seq = 0;  // older events were dropped (kMaxEvents)
  template <typename V>
  void Fields(V& v) {
    v.Required("events", events);
    v.Optional("last_seq", last_seq);
    v.Optional("first_kept_seq", first_kept_seq);
  }
};

// --- Slow-node probes ------------------------------------------------------

// An operator's probe results: the coordinator commits them, raising a
// `slow` condition (device "probe/<kind>", degraded) on every node flagged and
// clearing it on every node measured and not flagged. Nodes not in the
// results keep what they had.
struct ReportProbe {
  static constexpr MessageType kType = MessageType::kReportProbe;
  ProbeKind kind = ProbeKind::kNetwork;
  std::vector<ProbeResult> results;
  template <typename V>
  void Fields(V& v) {
    v.Required("kind", kind);
    v.Required("results", results);
  }
};

struct ReportProbeReply {
  static constexpr MessageType kType = MessageType::kReportProbeReply;
  uint32_t flagged = 0;  // nodes now carrying a slow condition from this kind of probe
  template <typename V>
  void Fields(V& v) {
    v.Optional("flagged", flagged);
  }
};

}  // namespace gpool
