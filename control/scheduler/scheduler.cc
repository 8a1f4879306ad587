#include "control/scheduler/scheduler.h"

#include <algorithm>
#include <map>
#include <optional>

namespace gpool::scheduler {
namespace {

using topology::NodeView;

// A node as the cycle sees it: the view plus GPU counts kept up to date as
// tasks are tentatively placed, so checks and scores never rescan the GPUs.
struct WorkingNode {
  NodeView view;
  uint32_t free_gpus = 0;
  uint32_t usable_gpus = 0;
};

// The reasons a node can reject a task, in the order they are checked.
enum class Reject { kNotReady, kCordoned, kGpus, kCpu, kMemory };

std::string_view RejectText(Reject reason) {
  switch (reason) {
    case Reject::kNotReady: return "node not ready";
    case Reject::kCordoned: return "node cordoned";
    case Reject::kGpus: return "insufficient GPUs";
    case Reject::kCpu: return "insufficient CPU";
    case Reject::kMemory: return "insufficient memory";
  }
  return "unknown";
}

std::optional<Reject> CheckFeasible(const WorkingNode& node, const Resources& need) {
  if (!node.view.ready) return Reject::kNotReady;
  if (node.view.cordoned) return Reject::kCordoned;
  if (node.free_gpus < need.gpus) return Reject::kGpus;
  if (node.view.cpu_milli_free < need.cpu_milli) return Reject::kCpu;
  if (node.view.memory_mib_free < need.memory_mib) return Reject::kMemory;
  return std::nullopt;
}

uint64_t Permille(uint64_t used, uint64_t total) { return total == 0 ? 1000 : used * 1000 / total; }

// Utilisation of the node after placing `need`, GPUs weighted highest because
// they are the scarce resource whole-node jobs wait for.
int64_t Score(const WorkingNode& working, const Resources& need, Strategy strategy) {
  const NodeView& node = working.view;
  const uint64_t usable = working.usable_gpus;
  const uint64_t gpus_used_after = usable - working.free_gpus + need.gpus;
  const uint64_t cpu_used_after = node.cpu_milli_total - node.cpu_milli_free + need.cpu_milli;
  const uint64_t mem_used_after = node.memory_mib_total - node.memory_mib_free + need.memory_mib;
  const int64_t utilisation = static_cast<int64_t>(10 * Permille(gpus_used_after, usable) +
                                                   Permille(cpu_used_after, node.cpu_milli_total) +
                                                   Permille(mem_used_after, node.memory_mib_total));
  return strategy == Strategy::kBinpack ? utilisation : -utilisation;
}

std::vector<uint32_t> TakeGpus(WorkingNode& working, uint32_t count) {
  std::vector<uint32_t> taken;
  working.free_gpus -= count;
  for (auto& gpu : working.view.gpus) {
    if (taken.size() == count) break;
    if (gpu.healthy && !gpu.allocated) {
      gpu.allocated = true;
      taken.push_back(gpu.index);
    }
  }
  return taken;
}

void Release(WorkingNode& working, const Placement& placement) {
  NodeView& node = working.view;
  working.free_gpus += static_cast<uint32_t>(placement.gpu_indices.size());
  for (uint32_t index : placement.gpu_indices) {
    for (auto& gpu : node.gpus) {
      if (gpu.index == index) gpu.allocated = false;
    }
  }
  node.cpu_milli_free += placement.cpu_milli;
  node.memory_mib_free += placement.memory_mib;
}

// What a task could get on the best node if the cluster were empty; used to
// tell "wait" apart from "will never fit".
struct LargestNode {
  uint32_t gpus = 0;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
};

LargestNode Largest(const std::vector<NodeView>& nodes) {
  LargestNode largest;
  for (const auto& node : nodes) {
    largest.gpus = std::max(largest.gpus, node.UsableGpus());
    largest.cpu_milli = std::max(largest.cpu_milli, node.cpu_milli_total);
    largest.memory_mib = std::max(largest.memory_mib, node.memory_mib_total);
  }
  return largest;
}

std::vector<std::string> Explain(const topology::PendingTask& task, const std::map<Reject, uint32_t>& rejects,
                                 size_t node_count, const LargestNode& largest) {
  std::vector<std::string> reasons;
  if (node_count == 0) {
    reasons.push_back("no nodes registered");
    return reasons;
  }
  const auto& need = task.resources;
  if (need.gpus > largest.gpus) {
    reasons.push_back("task " + std::to_string(task.index) + " needs " + std::to_string(need.gpus) +
                      " GPUs but the largest node has " + std::to_string(largest.gpus));
  }
  if (need.cpu_milli > largest.cpu_milli) {
    reasons.push_back("task " + std::to_string(task.index) + " needs " + std::to_string(need.cpu_milli) +
                      " milli-CPU but the largest node has " + std::to_string(largest.cpu_milli));
  }
  if (need.memory_mib > largest.memory_mib) {
    reasons.push_back("task " + std::to_string(task.index) + " needs " + std::to_string(need.memory_mib) +
                      " MiB memory but the largest node has " + std::to_string(largest.memory_mib));
  }
  for (const auto& [reject, count] : rejects) {
    reasons.push_back(std::to_string(count) + (count == 1 ? " node: " : " nodes: ") + std::string(RejectText(reject)));
  }
  return reasons;
}

}  // namespace

std::string_view StrategyName(Strategy strategy) { return strategy == Strategy::kBinpack ? "binpack" : "spread"; }

Result<Strategy> StrategyFromName(std::string_view name) {
  if (name == "binpack") return Strategy::kBinpack;
  if (name == "spread") return Strategy::kSpread;
  return Status::InvalidArgument("unknown placement strategy '" + std::string(name) + "' (expected binpack or spread)");
}

Plan Schedule(const topology::ClusterView& view, const SchedulerOptions& options) {
  Plan plan;
  const LargestNode largest = Largest(view.nodes);
  std::vector<WorkingNode> nodes;
  nodes.reserve(view.nodes.size());
  for (const auto& node : view.nodes) nodes.push_back(WorkingNode{node, node.FreeGpus(), node.UsableGpus()});

  std::vector<const topology::PendingJob*> order;
  order.reserve(view.pending.size());
  for (const auto& job : view.pending) order.push_back(&job);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    return a->arrival < b->arrival;
  });

  for (const auto* job : order) {
    std::vector<std::pair<size_t, Placement>> tentative;
    std::vector<std::string> reasons;
    for (const auto& task : job->tasks) {
      std::map<Reject, uint32_t> rejects;
      std::optional<size_t> best;
      int64_t best_score = 0;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (auto reject = CheckFeasible(nodes[i], task.resources)) {
          ++rejects[*reject];
          continue;
        }
        int64_t score = Score(nodes[i], task.resources, options.strategy);
        if (!best || score > best_score) {
          best = i;
          best_score = score;
        }
      }
      if (!best) {
        reasons = Explain(task, rejects, nodes.size(), largest);
        break;
      }
      WorkingNode& node = nodes[*best];
      Placement placement{job->id, task.index, node.view.name, TakeGpus(node, task.resources.gpus),
                          task.resources.cpu_milli, task.resources.memory_mib};
      node.view.cpu_milli_free -= task.resources.cpu_milli;
      node.view.memory_mib_free -= task.resources.memory_mib;
      tentative.emplace_back(*best, std::move(placement));
    }
    if (!reasons.empty()) {
      for (const auto& [node_index, placement] : tentative) Release(nodes[node_index], placement);
      plan.pending.push_back(PendingReasons{job->id, std::move(reasons)});
      continue;
    }
    for (auto& [node_index, placement] : tentative) plan.binds.push_back(std::move(placement));
  }
  return plan;
}

}  // namespace gpool::scheduler
