#include "control/scheduler/queue_tree.h"

#include <algorithm>

namespace gpool::scheduler {
namespace {

QueuePolicy QueuePolicyOfView(const topology::QueueView& queue) {
  QueuePolicy policy;
  policy.preemptors = 0;
  for (PriorityClass c : queue.preempting_classes) policy.preemptors |= static_cast<uint8_t>(1u << static_cast<unsigned>(c));
  policy.low_reclaimable = queue.low_reclaimable;
  return policy;
}

}  // namespace

QueueTree::QueueTree(const std::vector<topology::QueueView>& queues, const std::vector<std::string>& models) {
  for (const char* base : {"gpu", "cpu", "memory", "gpu_memory"}) Intern(base);
  for (const auto& model : models) {
    if (!model.empty()) Intern("gpu/" + model);
  }
  for (const auto& queue : queues) {
    for (const Quota* quota : {&queue.capability, &queue.deserved, &queue.guarantee}) {
      for (const auto& [name, amount] : *quota) Intern(name);
    }
  }
  const size_t resources = resource_names_.size();
  QueueNode root;
  root.name = "root";
  root.capability.assign(resources, kUnlimited);
  root.deserved.assign(resources, kUnlimited);
  root.guarantee.assign(resources, 0);
  root.used.assign(resources, 0);
  root.claimed.assign(resources, 0);
  for (const auto& queue : queues) {
    if (queue.name == "root") {
      root.capability = FromQuota(queue.capability, kUnlimited);
      root.deserved = FromQuota(queue.deserved, kUnlimited);
      root.guarantee = FromQuota(queue.guarantee, 0);
      root.policy = QueuePolicyOfView(queue);
    }
  }
  queues_.push_back(std::move(root));
  by_name_["root"] = 0;
  for (const auto& queue : queues) {
    if (queue.name == "root" || by_name_.count(queue.name)) continue;
    QueueNode node;
    node.name = queue.name;
    node.capability = FromQuota(queue.capability, kUnlimited);
    node.deserved = FromQuota(queue.deserved, kUnlimited);
    node.guarantee = FromQuota(queue.guarantee, 0);
    node.policy = QueuePolicyOfView(queue);
    node.used.assign(resources, 0);
    node.claimed.assign(resources, 0);
    by_name_[queue.name] = static_cast<int>(queues_.size());
    queues_.push_back(std::move(node));
  }
  // Parents are linked once every queue exists, so the view may list them in
  // any order; a parent that is missing (or a cycle) hangs the queue off root.
  for (const auto& queue : queues) {
    auto self = by_name_.find(queue.name);
    if (self == by_name_.end() || self->second == 0) continue;
    auto parent = by_name_.find(queue.parent);
    queues_[static_cast<size_t>(self->second)].parent = parent == by_name_.end() ? 0 : parent->second;
  }
  for (size_t i = 1; i < queues_.size(); ++i) {
    // Walk up at most size() steps; a longer walk is a cycle.
    int at = static_cast<int>(i);
    uint32_t depth = 0;
    while (at != 0 && depth <= queues_.size()) {
      at = queues_[static_cast<size_t>(at)].parent;
      ++depth;
    }
    if (at != 0) {
      queues_[i].parent = 0;
      depth = 1;
    }
    queues_[i].depth = depth;
  }
  for (size_t i = 1; i < queues_.size(); ++i) queues_[static_cast<size_t>(queues_[i].parent)].leaf = false;
  std::vector<uint8_t> own(queues_.size(), 0xFF);
  for (const auto& queue : queues) {
    auto self = by_name_.find(queue.name);
    if (self == by_name_.end() || queue.pools.empty()) continue;
    uint8_t mask = 0;
    for (const auto& pool : queue.pools) {
      if (auto p = NodePoolFromString(pool)) mask |= static_cast<uint8_t>(1u << static_cast<unsigned>(*p));
    }
    own[static_cast<size_t>(self->second)] = mask;
  }
  for (size_t i = 0; i < queues_.size(); ++i) {
    uint8_t mask = own[i];
    // Parents are acyclic by now, so the walk ends at root.
    for (int at = queues_[i].parent; at >= 0; at = queues_[static_cast<size_t>(at)].parent) {
      mask &= own[static_cast<size_t>(at)];
    }
    queues_[i].pools = mask;
  }
  totals_.assign(resources, 0);
  capped_.assign(resources, false);
  deserved_set_.assign(resources, false);
  for (const auto& queue : queues_) {
    for (size_t r = 0; r < resources; ++r) {
      capped_[r] = capped_[r] || queue.capability[r] != kUnlimited;
      deserved_set_[r] = deserved_set_[r] || queue.deserved[r] != kUnlimited;
    }
  }
}

size_t QueueTree::Intern(const std::string& name) {
  auto [it, inserted] = resource_index_.emplace(name, resource_names_.size());
  if (inserted) {
    resource_names_.push_back(name);
    if (name.size() > 4 && name.compare(0, 4, "gpu/") == 0) model_index_.emplace(name.substr(4), it->second);
  }
  return it->second;
}

Amounts QueueTree::FromQuota(const Quota& quota, uint64_t unset) const {
  Amounts amounts(resource_names_.size(), unset);
  for (const auto& [name, amount] : quota) {
    auto it = resource_index_.find(name);
    if (it != resource_index_.end()) amounts[it->second] = amount;
  }
  return amounts;
}

int QueueTree::Resolve(const std::string& name) {
  auto it = by_name_.find(name);
  if (it != by_name_.end()) return it->second;
  QueueNode node;
  node.name = name;
  node.parent = 0;
  node.depth = 1;
  node.capability.assign(resource_names_.size(), kUnlimited);
  node.deserved.assign(resource_names_.size(), kUnlimited);
  node.guarantee.assign(resource_names_.size(), 0);
  node.used.assign(resource_names_.size(), 0);
  node.claimed.assign(resource_names_.size(), 0);
  queues_[0].leaf = false;
  const int index = static_cast<int>(queues_.size());
  queues_.push_back(std::move(node));
  by_name_[name] = index;
  return index;
}

std::optional<size_t> QueueTree::ModelIndex(const std::string& model) const {
  if (model.empty()) return std::nullopt;
  auto it = model_index_.find(model);
  if (it == model_index_.end()) return std::nullopt;
  return it->second;
}

Amounts QueueTree::Demand(uint32_t gpus, uint64_t cpu_milli, uint64_t memory_mib, const std::string& model,
                          uint64_t gpu_memory_mib) const {
  Amounts demand(resource_names_.size(), 0);
  AddDemand(demand, gpus, cpu_milli, memory_mib, model, gpu_memory_mib);
  return demand;
}

void QueueTree::AddDemand(std::span<uint64_t> into, uint32_t gpus, uint64_t cpu_milli, uint64_t memory_mib,
                          const std::string& model, uint64_t gpu_memory_mib) const {
  into[kGpu] += gpus;
  into[kCpu] += cpu_milli;
  into[kMemory] += memory_mib;
  into[kGpuMemory] += gpu_memory_mib;
  if (gpus > 0) {
    if (auto index = ModelIndex(model)) into[*index] += gpus;
  }
}

std::optional<QueueTree::Overrun> QueueTree::CheckCapability(int leaf, const Amounts& demand,
                                                             bool within_deserved) const {
  for (int at = leaf; at >= 0; at = queues_[static_cast<size_t>(at)].parent) {
    const QueueNode& queue = queues_[static_cast<size_t>(at)];
    for (size_t r = 0; r < demand.size(); ++r) {
      if (demand[r] == 0) continue;
      if (queue.capability[r] != kUnlimited && queue.used[r] + demand[r] > queue.capability[r]) {
        return Overrun{at, r, false};
      }
      if (within_deserved && queue.deserved[r] != kUnlimited && queue.used[r] + demand[r] > queue.deserved[r]) {
        return Overrun{at, r, true};
      }
    }
  }
  return std::nullopt;
}

topology::PendingReason QueueTree::DescribeOverrun(const Overrun& overrun, const Amounts& demand) const {
  const QueueNode& queue = queues_[static_cast<size_t>(overrun.queue)];
  const size_t r = overrun.resource;
  return topology::PendingReason{.code = overrun.deserved ? topology::PendingCode::kQueueAtDeserved
                                                          : topology::PendingCode::kQueueAtCapability,
                                 .need = demand[r],
                                 .have = queue.used[r],
                                 .limit = overrun.deserved ? queue.deserved[r] : queue.capability[r],
                                 .queue = queue.name,
                                 .resource = resource_names_[r]};
}

void QueueTree::UsageChanged(int leaf) {
  ++version_;
  if (used_version_.size() != queues_.size()) used_version_.resize(queues_.size(), 0);
  for (int at = leaf; at >= 0; at = queues_[static_cast<size_t>(at)].parent) {
    used_version_[static_cast<size_t>(at)] = version_;
  }
}

void QueueTree::Charge(int leaf, std::span<const uint64_t> demand) {
  UsageChanged(leaf);
  for (int at = leaf; at >= 0; at = queues_[static_cast<size_t>(at)].parent) {
    auto& used = queues_[static_cast<size_t>(at)].used;
    for (size_t r = 0; r < demand.size(); ++r) used[r] += demand[r];
  }
}

void QueueTree::Refund(int leaf, std::span<const uint64_t> demand) {
  UsageChanged(leaf);
  for (int at = leaf; at >= 0; at = queues_[static_cast<size_t>(at)].parent) {
    auto& used = queues_[static_cast<size_t>(at)].used;
    for (size_t r = 0; r < demand.size(); ++r) used[r] -= std::min(used[r], demand[r]);
  }
}

void QueueTree::Claim(int leaf, const Amounts& demand) {
  ++version_;
  for (int at = leaf; at >= 0; at = queues_[static_cast<size_t>(at)].parent) {
    auto& claimed = queues_[static_cast<size_t>(at)].claimed;
    for (size_t r = 0; r < demand.size(); ++r) claimed[r] += demand[r];
  }
}

uint64_t QueueTree::DominantShare(int index) const {
  const size_t q = static_cast<size_t>(index);
  if (share_at_.size() != queues_.size()) {
    share_at_.resize(queues_.size(), kShareUnknown);
    share_.resize(queues_.size(), 0);
  }
  const uint64_t changed = std::max(q < used_version_.size() ? used_version_[q] : 0, totals_version_);
  if (share_at_[q] != kShareUnknown && changed <= share_at_[q]) return share_[q];
  share_[q] = ComputeDominantShare(index);
  share_at_[q] = version_;
  return share_[q];
}

uint64_t QueueTree::ComputeDominantShare(int index) const {
  const QueueNode& queue = queues_[static_cast<size_t>(index)];
  uint64_t share = 0;
  for (size_t r = 0; r < queue.used.size(); ++r) {
    if (queue.used[r] == 0) continue;
    // GPUs, CPU, memory and device memory weigh against the deserved share
    // or the cluster's total; a GPU model only where a deserved share names
    // it (a queue on the only H100s is not dominant for holding them).
    if (r > kGpuMemory && queue.deserved[r] == kUnlimited) continue;
    const uint64_t weight = queue.deserved[r] != kUnlimited ? queue.deserved[r] : totals_[r];
    // In 64 bits where the product fits (always, but for absurd quotas):
    // a 128-bit division is a library call.
    const uint64_t used = queue.used[r];
    const uint64_t s = weight == 0                          ? kUnlimited / 2
                       : used <= UINT64_MAX / 1'000'000 ? used * 1'000'000 / weight
                                                        : static_cast<uint64_t>(static_cast<unsigned __int128>(used) *
                                                                                1'000'000 / weight);
    share = std::max(share, s);
  }
  return share;
}

const std::vector<int>& QueueTree::Path(int leaf) const {
  if (paths_.size() != queues_.size()) paths_.assign(queues_.size(), {});
  auto& path = paths_[static_cast<size_t>(leaf)];
  if (path.empty()) {
    for (int at = leaf; at >= 0; at = queues_[static_cast<size_t>(at)].parent) path.push_back(at);
    std::reverse(path.begin(), path.end());
  }
  return path;
}

bool QueueTree::ShareKeyChanged(int leaf, uint64_t since) const {
  if (totals_version_ > since) return true;
  for (int at = leaf; at > 0; at = queues_[static_cast<size_t>(at)].parent) {
    if (static_cast<size_t>(at) < used_version_.size() && used_version_[static_cast<size_t>(at)] > since) return true;
  }
  return false;
}

void QueueTree::ShareKey(int leaf, std::vector<uint64_t>& key) const {
  key.clear();
  for (int at : Path(leaf)) {
    if (at != 0) key.push_back(DominantShare(at));
  }
}

}  // namespace gpool::scheduler
