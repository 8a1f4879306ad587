#include "control/scheduler/gpu_picker.h"

#include <algorithm>
#include <map>

namespace gpool::scheduler {
namespace {

using topology::NodeView;

// Adjacency between slot positions, symmetric.
std::vector<std::vector<bool>> Links(const NodeView& node) {
  const size_t n = node.gpus.size();
  std::vector<std::vector<bool>> linked(n, std::vector<bool>(n, false));
  std::map<uint32_t, size_t> slot_of;
  for (size_t s = 0; s < n; ++s) slot_of[node.gpus[s].index] = s;
  for (size_t s = 0; s < n; ++s) {
    for (uint32_t peer : node.gpus[s].nvlink_peers) {
      auto it = slot_of.find(peer);
      if (it == slot_of.end() || it->second == s) continue;
      linked[s][it->second] = linked[it->second][s] = true;
    }
  }
  return linked;
}

// Connected groups of `candidates` over NVLink.
std::vector<std::vector<size_t>> Components(const std::vector<size_t>& candidates,
                                            const std::vector<std::vector<bool>>& linked) {
  std::vector<std::vector<size_t>> groups;
  std::vector<bool> seen(linked.size(), false);
  for (size_t start : candidates) {
    if (seen[start]) continue;
    std::vector<size_t> group = {start};
    seen[start] = true;
    for (size_t i = 0; i < group.size(); ++i) {
      for (size_t other : candidates) {
        if (!seen[other] && linked[group[i]][other]) {
          seen[other] = true;
          group.push_back(other);
        }
      }
    }
    std::sort(group.begin(), group.end());
    groups.push_back(std::move(group));
  }
  return groups;
}

// Grows a set of `count` from `pool`, each step adding the GPU with the most
// links into the set (lowest position among equals).
std::vector<size_t> Greedy(const std::vector<size_t>& pool, uint32_t count,
                           const std::vector<std::vector<bool>>& linked) {
  auto links_into = [&](size_t gpu, const std::vector<size_t>& set) {
    size_t links = 0;
    for (size_t other : set) links += linked[gpu][other] ? 1 : 0;
    return links;
  };
  std::vector<size_t> chosen;
  std::vector<size_t> left = pool;
  // Seed: the best-connected GPU of the pool.
  auto seed = std::max_element(left.begin(), left.end(), [&](size_t a, size_t b) {
    const size_t la = links_into(a, pool), lb = links_into(b, pool);
    return la != lb ? la < lb : a > b;
  });
  chosen.push_back(*seed);
  left.erase(seed);
  while (chosen.size() < count && !left.empty()) {
    auto next = std::max_element(left.begin(), left.end(), [&](size_t a, size_t b) {
      const size_t la = links_into(a, chosen), lb = links_into(b, chosen);
      return la != lb ? la < lb : a > b;
    });
    chosen.push_back(*next);
    left.erase(next);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

size_t InternalLinks(const std::vector<size_t>& set, const std::vector<std::vector<bool>>& linked) {
  size_t links = 0;
  for (size_t i = 0; i < set.size(); ++i) {
    for (size_t j = i + 1; j < set.size(); ++j) links += linked[set[i]][set[j]] ? 1 : 0;
  }
  return links;
}

// The best choice among `candidates` alone (no NUMA concern).
std::optional<std::vector<size_t>> PickAmong(const std::vector<size_t>& candidates, uint32_t count,
                                             const std::vector<std::vector<bool>>& linked) {
  if (candidates.size() < count) return std::nullopt;
  if (count == 0) return std::vector<size_t>{};
  auto groups = Components(candidates, linked);
  if (count == 1) {
    // From the smallest group: broken-up groups go first.
    auto smallest = std::min_element(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
      return a.size() != b.size() ? a.size() < b.size() : a.front() < b.front();
    });
    return std::vector<size_t>{smallest->front()};
  }
  // The smallest group that holds the whole task (exact fit first).
  const std::vector<size_t>* best = nullptr;
  for (const auto& group : groups) {
    if (group.size() < count) continue;
    if (best == nullptr || group.size() < best->size()) best = &group;
  }
  if (best != nullptr) return Greedy(*best, count, linked);
  return Greedy(candidates, count, linked);  // spans groups: still the best-linked set
}

// No GPU reports an NVLink peer: every set is as well linked as any other,
// so the choice below always comes down to the lowest free positions.
bool Unlinked(const NodeView& node) {
  return std::all_of(node.gpus.begin(), node.gpus.end(), [](const auto& gpu) { return gpu.nvlink_peers.empty(); });
}

}  // namespace

std::optional<std::vector<size_t>> PickGpus(const NodeView& node, const DeviceBits& free,
                                            const GpuRequest& request) {
  std::vector<size_t> candidates;
  candidates.reserve(node.gpus.size());  // one allocation, not one per doubling: this runs per placement
  // Any model: no device's model is read (each device is a cold line at 100,000 nodes).
  const bool any_model = request.model.empty();
  for (size_t s = 0; s < node.gpus.size() && s < free.size(); ++s) {
    if (free[s] && (any_model || GpuModelAllowed(request.model, node.gpus[s].model))) candidates.push_back(s);
  }
  if (candidates.size() < request.count) return std::nullopt;
  if (request.count == 0) return std::vector<size_t>{};
  // What PickAmong would choose, without the link matrix and groups it
  // builds: this runs for every candidate node a task is scored on.
  if (request.numa == topology::NumaPolicy::kNone && Unlinked(node)) {
    candidates.resize(request.count);
    return candidates;
  }
  const auto linked = Links(node);
  if (request.numa == topology::NumaPolicy::kNone) return PickAmong(candidates, request.count, linked);

  // Per NUMA node; GPUs of unknown NUMA (-1) form their own group.
  std::map<int32_t, std::vector<size_t>> by_numa;
  for (size_t s : candidates) by_numa[node.gpus[s].numa].push_back(s);
  std::optional<std::vector<size_t>> best;
  for (const auto& [numa, gpus] : by_numa) {
    auto pick = PickAmong(gpus, request.count, linked);
    if (!pick) continue;
    // The better-linked set wins; then the NUMA node with fewer free GPUs,
    // which keeps emptier ones whole.
    if (!best || InternalLinks(*pick, linked) > InternalLinks(*best, linked) ||
        (InternalLinks(*pick, linked) == InternalLinks(*best, linked) &&
         gpus.size() < by_numa[node.gpus[best->front()].numa].size())) {
      best = std::move(pick);
    }
  }
  if (best || request.numa == topology::NumaPolicy::kSingleNumaNode) return best;
  return PickAmong(candidates, request.count, linked);  // best-effort: span NUMA nodes
}

}  // namespace gpool::scheduler
