// Session::FindNode (session.h): the search for a task's node over the
// bucket index of nodes by pool and free-GPU count, with twin nodes checked
// and scored once per search; and the failed-search shortcut it relies on.
#include "control/scheduler/session.h"

#include <algorithm>
#include <array>
#include <optional>

#include "control/scheduler/exclusive_cores.h"

namespace gpool::scheduler {

using topology::PendingReason;
using topology::PendingTask;

namespace {

// One search's checks and scores of twin nodes (WorkNode::twin_class): a
// node's twins are those of its class with the same free GPUs, CPU and
// memory. A search sees a few dozen nodes and a handful of kinds; a kind
// past the table's room is checked node by node, as before.
class TwinMemo {
 public:
  struct Entry {
    uint32_t twin_class = WorkNode::kNoTwin;
    uint32_t free_gpus = 0;
    uint64_t cpu_free = 0;
    uint64_t memory_free = 0;
    bool checked = false;
    std::optional<Reject> reject;
    bool scored = false;
    Session::NodeScore score;
  };
  // The entry of `node`'s twins (added unchecked), or nullptr when the node
  // has none that can stand for it: odd (an owner, taints, a claim or a
  // reservation: the checks read the node itself), shared on this cycle
  // (loads), of no class, or the table is full.
  Entry* Of(const WorkNode& node) {
    if (node.twin_class == WorkNode::kNoTwin || node.odd || !node.loads.empty()) return nullptr;
    for (size_t i = 0; i < size_; ++i) {
      Entry& entry = entries_[i];
      if (entry.twin_class == node.twin_class && entry.free_gpus == node.free_gpus && entry.cpu_free == node.cpu_free &&
          entry.memory_free == node.memory_free) {
        return &entry;
      }
    }
    if (size_ == entries_.size()) return nullptr;
    Entry& entry = entries_[size_++];
    entry.twin_class = node.twin_class;
    entry.free_gpus = node.free_gpus;
    entry.cpu_free = node.cpu_free;
    entry.memory_free = node.memory_free;
    return &entry;
  }

 private:
  std::array<Entry, 16> entries_;
  size_t size_ = 0;
};

}  // namespace

std::optional<size_t> Session::FindNode(const WorkJob& job, const PendingTask& task, bool ignore_reservations,
                                        std::vector<PendingReason>& reasons, const std::vector<bool>* allowed) {
  // Holders of claims or reservations see nodes nobody else may use, and a
  // narrowed search sees fewer, so their failures say nothing about the
  // shape in general.
  const bool holder = job.has_claim || HoldsReservation(job) || allowed != nullptr;
  std::string& key = shape_key_;
  if (!holder) {
    ShapeKey(job, task, ignore_reservations, key);
    auto cached = failed_shapes_.find(key);
    if (cached != failed_shapes_.end() && cached->second.first == generation_) {
      reasons.insert(reasons.end(), cached->second.second.begin(), cached->second.second.end());
      return std::nullopt;
    }
  }
  ShortNodes* short_nodes = nullptr;
  if (!holder) {
    auto& entry = short_nodes_[key];
    if (entry.generation != generation_) {
      entry.generation = generation_;
      entry.reject.clear();
      entry.listed.clear();
    }
    short_nodes = &entry;
  }
  // Every rejection is counted as it happens, so a task that finds no node
  // is explained from this one search.
  RejectCounts counts{};
  auto remembered_short = [&](uint32_t node_index) {
    if (!short_nodes || short_nodes->listed.empty() || short_nodes->reject[node_index] == 0) return false;
    ++counts[short_nodes->reject[node_index] - 1];
    return true;
  };
  auto rejected = [&](uint32_t node_index, Reject reject) {
    ++counts[static_cast<size_t>(reject)];
    if (short_nodes && (reject == Reject::kCpu || reject == Reject::kMemory)) {
      if (short_nodes->listed.empty()) short_nodes->reject.assign(nodes_.size(), 0);
      short_nodes->reject[node_index] = static_cast<uint8_t>(static_cast<size_t>(reject) + 1);
      short_nodes->listed.push_back(node_index);
    }
  };
  auto check = [&](uint32_t node_index) {
    if (remembered_short(node_index)) return false;
    auto reject = Check(job, task, nodes_[node_index], ignore_reservations);
    if (!reject) return true;
    rejected(node_index, *reject);
    return false;
  };
  const NodePool pool = job.pool;
  // Shares, MIG instances and time-sliced replicas fit on nodes without a
  // whole free GPU too.
  const uint32_t need = task.resources.Whole() && !MayTimeSlice(job, task) ? task.resources.gpus : 0;
  std::optional<size_t> best;
  NodeScore best_score;
  uint32_t found = 0;
  const uint32_t wanted = std::max<uint32_t>(1, config_.node_order.candidates);
  const auto& pool_buckets = buckets_[static_cast<size_t>(pool)];
  // Every strategy but spread looks at the fullest nodes first: with a
  // candidate limit, those are the ones worth scoring. A job's own node
  // policy decides for its tasks.
  const PlacementPolicy own = job.view->node_policy;
  const bool binpack = own == PlacementPolicy::kDefault ? config_.node_order.strategy != Strategy::kSpread
                                                        : own == PlacementPolicy::kBinpack;
  const int top = static_cast<int>(largest_gpus_);
  // Twins (WorkNode::twin_class) are checked and scored once per search.
  // What could tell them apart is left out: a task other than whole GPUs
  // (device loads decide), a NUMA policy or UUID list (which devices are
  // free decides), exclusive cores (which CPU ids are free decides), a node
  // selector (labels decide), and for a score a
  // strategy that reads more than the node's figures (random draws per
  // node, gpu-clustering what runs there, ...).
  const topology::PendingJob& spec = *job.view;
  const bool twins = task.resources.Whole() && spec.numa_policy == topology::NumaPolicy::kNone &&
                     ExclusiveCoresWanted(task.resources) == 0 && spec.gpu_uuid_allow.empty() &&
                     spec.gpu_uuid_deny.empty() && spec.node_selector.empty();
  const Strategy strategy = config_.node_order.strategy;
  const bool twin_scores = twins && (strategy == Strategy::kFragmentation || strategy == Strategy::kFgd ||
                                     strategy == Strategy::kBinpack || strategy == Strategy::kSpread);
  const bool prefers = !spec.prefer_labels.empty();
  TwinMemo twin_memo;
  for (int step = 0; step <= top && found < wanted; ++step) {
    const int b = binpack ? static_cast<int>(need) + step : top - step;
    if (b < static_cast<int>(need) || b > top) continue;
    for (uint32_t node_index : pool_buckets[static_cast<size_t>(b)]) {
      if (allowed != nullptr && !(*allowed)[node_index]) continue;
      const WorkNode& node = nodes_[node_index];
      TwinMemo::Entry* twin = twins ? twin_memo.Of(node) : nullptr;
      NodeScore score;
      if (twin == nullptr) {
        if (!check(node_index)) continue;
        score = Score(job, task, node);
      } else {
        // A node remembered short for the shape fails its check now too
        // (capacity only shrinks within a generation), so one whose twin
        // passed is not on the list: no look at it (another cold line).
        const bool twin_passed = twin->checked && !twin->reject;
        if (!twin_passed && remembered_short(node_index)) continue;
        if (!twin->checked) {
          twin->reject = Check(job, task, node, ignore_reservations);
          twin->checked = true;
        }
        if (twin->reject) {
          rejected(node_index, *twin->reject);
          continue;
        }
        if (!twin_scores) {
          score = Score(job, task, node);
        } else {
          if (!twin->scored) {
            twin->score = ScoreOfShape(job, task, node);
            twin->scored = true;
          }
          score = twin->score;
          if (prefers) score.then += PreferBonus(job, node);
        }
      }
      if (!best || score > best_score || (score == best_score && node_index < *best)) {
        best = node_index;
        best_score = score;
      }
      if (++found >= wanted) break;
    }
  }
  if (best || allowed != nullptr) return best;
  // Nothing fits: every node of the pool with enough free GPUs was checked.
  // The rest were not searched: those with fewer free GPUs are checked now
  // for the record, and the unschedulable or other-pool ones are counted
  // under the checks that come first in the chain (not ready, cordoned,
  // another pool) without looking at them.
  if (FewerGpusFailOnGpus(job, task)) {
    // Checking each of them (most of the cluster when it is full) would
    // count them all under kGpus but for the odd nodes and those remembered
    // short for the shape: those are checked or counted alone, the rest in
    // bulk, so the explanation costs what the exceptions do.
    auto fewer = [&](const WorkNode& node) {
      return node.ready && !node.cordoned && node.pool == pool && node.free_gpus < need;
    };
    uint32_t plain = 0;
    for (int b = 0; b < static_cast<int>(need) && b <= top; ++b) {
      plain += static_cast<uint32_t>(pool_buckets[static_cast<size_t>(b)].size());
    }
    for (uint32_t node_index : odd_nodes_) {
      if (!fewer(nodes_[node_index])) continue;
      --plain;
      check(node_index);
    }
    if (short_nodes) {
      for (uint32_t node_index : short_nodes->listed) {
        const WorkNode& node = nodes_[node_index];
        if (node.odd || !fewer(node)) continue;
        --plain;
        ++counts[short_nodes->reject[node_index] - 1];
      }
    }
    counts[static_cast<size_t>(Reject::kGpus)] += plain;
  } else {
    for (int b = 0; b < static_cast<int>(need) && b <= top; ++b) {
      for (uint32_t node_index : pool_buckets[static_cast<size_t>(b)]) check(node_index);
    }
  }
  counts[static_cast<size_t>(Reject::kNotReady)] += not_ready_nodes_;
  counts[static_cast<size_t>(Reject::kCordoned)] += cordoned_nodes_;
  counts[static_cast<size_t>(Reject::kPool)] += schedulable_nodes_ - schedulable_in_pool_[static_cast<size_t>(pool)];
  auto explained = Explain(task, counts);
  reasons.insert(reasons.end(), explained.begin(), explained.end());
  if (!holder) failed_shapes_[key] = {generation_, std::move(explained)};
  return std::nullopt;
}

bool Session::FewerGpusFailOnGpus(const WorkJob& job, const PendingTask& task) const {
  // Every check before the free-GPU one passes on a node that is not odd,
  // for a job that asks for nothing but whole GPUs, CPU and memory in a
  // shared pool its queue may use.
  const Resources& need = task.resources;
  const topology::PendingJob& spec = *job.view;
  // A model pinned passes on every node when all have that model only and
  // enough healthy GPUs of it.
  const bool model_passes =
      need.gpu_model.empty() || (every_node_model_ && GpuModelAllowed(need.gpu_model, *every_node_model_) &&
                                 need.gpus <= smallest_healthy_gpus_);
  return need.Whole() && need.gpus > 0 && model_passes && need.cpu_milli <= smallest_cpu_ &&
         need.memory_mib <= smallest_memory_ && job.pool != NodePool::kExclusive && !job.borrowing &&
         ((job.queue_pools >> static_cast<unsigned>(job.pool)) & 1u) != 0 && spec.node_selector.empty();
}

}  // namespace gpool::scheduler
