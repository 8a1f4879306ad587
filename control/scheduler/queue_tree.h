// QueueTree: the queue hierarchy as one scheduling cycle sees it, with what
// each queue holds kept current as the cycle places tasks.
//
// Quota names ("gpu", "cpu", "memory", "gpu/A100") are interned into dense
// indices once per cycle so every check is a few array reads: a cycle makes
// one capability check per placement attempt, hundreds of thousands of them
// at scale. A queue's usage always includes its descendants', so "never
// exceed capability" is checked on every queue from the leaf to the root.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "control/scheduler/class_rules.h"
#include "topology/pending_reason.h"
#include "protocol/types.h"
#include "topology/cluster_view.h"

namespace gpool::scheduler {

inline constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();

// Amounts indexed by interned resource: 0 gpu, 1 cpu, 2 memory, 3 gpu_memory,
// then one per GPU model. "gpu" counts devices a task uses, whole or shared.
using Amounts = std::vector<uint64_t>;
inline constexpr size_t kGpu = 0;
inline constexpr size_t kCpu = 1;
inline constexpr size_t kMemory = 2;
// Device memory in MiB: n shares of m MiB count n x m, whole GPUs their
// devices' memory; so memory-sized shares can be bounded like whole GPUs.
inline constexpr size_t kGpuMemory = 3;

struct QueueNode {
  std::string name;
  int parent = -1;  // index; -1 for root
  uint32_t depth = 0;
  Amounts capability;  // kUnlimited where unset
  Amounts deserved;    // kUnlimited where unset
  Amounts guarantee;   // 0 where unset
  Amounts used;        // bound and running tasks of it and its descendants
  Amounts claimed;     // what jobs that evicted for themselves will take once placed
  bool leaf = true;
  // Bit p set: its jobs may run in NodePool p; its own list (all pools when
  // empty) narrowed by every ancestor's.
  uint8_t pools = 0xFF;
  bool AllowsPool(NodePool pool) const { return (pools >> static_cast<unsigned>(pool)) & 1u; }
  QueuePolicy policy;  // its own (a queue added by Resolve has the defaults)
};

class QueueTree {
 public:
  // `models` are the GPU models seen on nodes; quotas may name others, which
  // are interned too (so a quota on a model nobody has yet still binds).
  QueueTree(const std::vector<topology::QueueView>& queues, const std::vector<std::string>& models);

  // The queue a job names, added as an unlimited leaf under root when the
  // view does not list it (a view built without queues).
  int Resolve(const std::string& name);
  size_t resource_count() const { return resource_names_.size(); }
  const std::string& resource_name(size_t r) const { return resource_names_[r]; }
  // The model's index, or nullopt for "" or a model nobody quotes or owns.
  std::optional<size_t> ModelIndex(const std::string& model) const;
  const QueueNode& queue(int index) const { return queues_[static_cast<size_t>(index)]; }
  size_t size() const { return queues_.size(); }

  // Demand of a task placed on GPUs of `model`.
  Amounts Demand(uint32_t gpus, uint64_t cpu_milli, uint64_t memory_mib, const std::string& model,
                 uint64_t gpu_memory_mib = 0) const;
  // Demand's amounts added to `into` (resource_count() long): a gang's sum
  // without a vector per task (100,000 pending tasks a cycle at 100k nodes),
  // or a running task's row of the session's charges.
  void AddDemand(std::span<uint64_t> into, uint32_t gpus, uint64_t cpu_milli, uint64_t memory_mib, const std::string& model,
                 uint64_t gpu_memory_mib = 0) const;
  // Some queue caps the resource (so per-node checks of it are worth making).
  bool Capped(size_t resource) const { return resource < capped_.size() && capped_[resource]; }
  // Some queue has a deserved share of the resource.
  bool DeservedSet(size_t resource) const { return resource < deserved_set_.size() && deserved_set_[resource]; }
  // The first queue from `leaf` up that `demand` would take past its
  // capability (or, `within_deserved`, past its deserved share where one is
  // set), with the resource; nullopt when it fits everywhere.
  struct Overrun {
    int queue = -1;
    size_t resource = 0;
    bool deserved = false;  // the deserved share, not the capability, is what it would pass
  };
  std::optional<Overrun> CheckCapability(int leaf, const Amounts& demand, bool within_deserved = false) const;
  topology::PendingReason DescribeOverrun(const Overrun& overrun, const Amounts& demand) const;
  void Charge(int leaf, std::span<const uint64_t> demand);
  void Refund(int leaf, std::span<const uint64_t> demand);
  void Claim(int leaf, const Amounts& demand);

  // Dominant share of a queue: the largest used/deserved over gpu, cpu,
  // memory and gpu_memory (the cluster total where deserved is unset) and
  // the GPU models its deserved share names, in millionths.
  uint64_t DominantShare(int queue) const;
  // Shares from the top of the tree down to `leaf`: DRF between siblings at
  // every level compares these lexicographically. Written into `key`, whose
  // capacity a caller refreshing keys after every placement reuses.
  void ShareKey(int leaf, std::vector<uint64_t>& key) const;
  // Whether ShareKey(leaf) may differ from what it gave at version `since`:
  // the usage of a queue on its path (the root's is not in the key) or the
  // cluster totals changed after it.
  bool ShareKeyChanged(int leaf, uint64_t since) const;
  void SetClusterTotals(const Amounts& totals) {
    totals_ = totals;
    totals_version_ = ++version_;
  }
  // Bumped by every change of usage, so callers can cache what they derive from it.
  uint64_t version() const { return version_; }
  // The queue's index, or nullopt when no queue has this name.
  std::optional<int> Find(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? std::nullopt : std::optional<int>(it->second);
  }
  // `queue` is `ancestor` or lies below it.
  bool InSubtree(int queue, int ancestor) const {
    for (int at = queue; at >= 0; at = queues_[static_cast<size_t>(at)].parent) {
      if (at == ancestor) return true;
    }
    return false;
  }
  // Path root..leaf (root first); cached, as reclaim asks for it per queue pair.
  const std::vector<int>& Path(int leaf) const;

 private:
  size_t Intern(const std::string& name);
  Amounts FromQuota(const Quota& quota, uint64_t unset) const;

  std::vector<std::string> resource_names_;
  std::map<std::string, size_t> resource_index_;
  // The "gpu/<model>" entries of resource_index_ by model: ModelIndex runs
  // per placement and per running task, and built the "gpu/" name each time.
  std::map<std::string, size_t> model_index_;
  std::vector<QueueNode> queues_;
  std::map<std::string, int> by_name_;
  Amounts totals_;
  std::vector<bool> capped_;  // by resource: some queue's capability names it
  std::vector<bool> deserved_set_;  // by resource: some queue's deserved names it
  mutable std::vector<std::vector<int>> paths_;
  uint64_t version_ = 0;  // by queue index; empty until asked
  // DominantShare remembered per queue: JobOrder asks for every queue's key
  // after each placement, and one placement changes the usage of one path.
  // used_version_[q]: version_ when q's usage last changed; share_at_[q]:
  // version_ when share_[q] was computed (kShareUnknown: never).
  static constexpr uint64_t kShareUnknown = UINT64_MAX;
  uint64_t totals_version_ = 0;
  std::vector<uint64_t> used_version_;
  mutable std::vector<uint64_t> share_at_;
  mutable std::vector<uint64_t> share_;
  void UsageChanged(int leaf);
  uint64_t ComputeDominantShare(int index) const;
};

}  // namespace gpool::scheduler
