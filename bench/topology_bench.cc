// gpool-bench-topology: how much network distance gpool's placements save
// against a topology-blind baseline, in the same run.
//
// A spine/leaf cluster (tier1 = leaf, tier2 = spine labels) is filled in
// rounds: every round submits a batch of multi-node training jobs onto the
// cluster left by the previous rounds (some earlier jobs finish, so free
// capacity is fragmented as in production). The same job stream is
// scheduled twice: with network_mode best-effort (gpool's network-aware
// placement) and with none (topology-blind). The communication-cost model is
// the hop count of a ring all-reduce over the job's nodes in task order:
// 0 within a node, 2 within a leaf, 4 across leaves under one spine, 6
// across spines; a job's cost is the largest hop of its ring (the ring runs
// at the speed of its slowest link), the sum over rings is reported too.
// Output: JSON lines {"metric", "value", "unit", "params"}; the ratio of the
// two is the number to compare across machines.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "control/scheduler/scheduler.h"
#include "topology/lcg.h"

namespace {

using gpool::JobId;
using gpool::Resources;
using gpool::scheduler::Plan;
using gpool::scheduler::SchedulerConfig;
using gpool::topology::ClusterView;
using gpool::topology::NetworkMode;
using gpool::topology::NodeView;
using gpool::topology::PendingJob;

using Rng = gpool::topology::Lcg;

constexpr int kSpines = 4;
constexpr int kLeavesPerSpine = 4;
constexpr int kNodesPerLeaf = 8;

struct Where {
  int leaf = 0;
  int spine = 0;
};

int Hops(const std::string& a, const std::string& b, const std::map<std::string, Where>& where) {
  if (a == b) return 0;
  const Where& x = where.at(a);
  const Where& y = where.at(b);
  if (x.leaf == y.leaf) return 2;
  if (x.spine == y.spine) return 4;
  return 6;
}

struct Outcome {
  uint64_t jobs_placed = 0;
  uint64_t worst_hop_sum = 0;   // sum over jobs of the ring's largest hop
  uint64_t ring_hop_sum = 0;    // sum over jobs of all ring hops
  uint64_t cross_spine_jobs = 0;
};

Outcome Run(NetworkMode mode, uint64_t seed) {
  Rng rng(seed);
  ClusterView view;
  std::map<std::string, Where> where;
  for (int s = 0; s < kSpines; ++s) {
    for (int l = 0; l < kLeavesPerSpine; ++l) {
      const int leaf = s * kLeavesPerSpine + l;
      for (int n = 0; n < kNodesPerLeaf; ++n) {
        NodeView node;
        node.name = "n" + std::to_string(leaf * kNodesPerLeaf + n);
        node.cpu_milli_total = node.cpu_milli_free = 128'000;
        node.memory_mib_total = node.memory_mib_free = 1 << 20;
        for (uint32_t g = 0; g < 8; ++g) node.gpus.push_back({g, "H100", 81920, true, false});
        node.labels[gpool::topology::TierLabel(1)] = "leaf" + std::to_string(leaf);
        node.labels[gpool::topology::TierLabel(2)] = "spine" + std::to_string(s);
        where[node.name] = Where{leaf, s};
        view.nodes.push_back(std::move(node));
      }
    }
  }
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < view.nodes.size(); ++i) index[view.nodes[i].name] = i;

  Outcome outcome;
  struct Running {
    std::vector<std::string> nodes;
    int rounds_left = 0;
  };
  std::vector<Running> running;
  uint64_t next_id = 1;
  SchedulerConfig config;
  config.reservation.enabled = false;  // compare placement alone
  for (int round = 0; round < 40; ++round) {
    // Finish some jobs: free their nodes.
    for (auto& job : running) {
      if (--job.rounds_left == 0) {
        for (const auto& name : job.nodes) {
          for (auto& gpu : view.nodes[index[name]].gpus) gpu.allocated = false;
        }
      }
    }
    running.erase(std::remove_if(running.begin(), running.end(), [](const Running& r) { return r.rounds_left <= 0; }),
                  running.end());
    view.pending.clear();
    for (int j = 0; j < 6; ++j) {
      PendingJob job;
      job.id = JobId(next_id);
      job.arrival = next_id++;
      job.queue = "default";
      const uint32_t nodes = 2 + static_cast<uint32_t>(rng.Below(7));  // 2-8 whole nodes
      for (uint32_t t = 0; t < nodes; ++t) job.tasks.push_back({t, 0, Resources{8, 1000, 1024, ""}});
      job.groups = {gpool::topology::GroupRule{nodes, 0, 0}};
      job.network_mode = mode;
      job.network_tier = 2;
      view.pending.push_back(std::move(job));
    }
    Plan plan = gpool::scheduler::Schedule(view, config);
    std::map<uint64_t, std::vector<std::string>> placed;
    for (const auto& bind : plan.binds) {
      placed[bind.job.value()].push_back(bind.node);
      auto& node = view.nodes[index[bind.node]];
      for (uint32_t g : bind.gpu_indices) node.gpus[g].allocated = true;
    }
    for (auto& [id, nodes] : placed) {
      ++outcome.jobs_placed;
      int worst = 0;
      for (size_t i = 0; i < nodes.size(); ++i) {
        const int hop = Hops(nodes[i], nodes[(i + 1) % nodes.size()], where);
        worst = std::max(worst, hop);
        outcome.ring_hop_sum += static_cast<uint64_t>(hop);
      }
      outcome.worst_hop_sum += static_cast<uint64_t>(worst);
      outcome.cross_spine_jobs += worst == 6 ? 1 : 0;
      running.push_back(Running{nodes, 1 + static_cast<int>(rng.Below(4))});
    }
  }
  return outcome;
}

void Print(const char* metric, double value, const char* unit, const std::string& params) {
  std::printf("{\"metric\": \"%s\", \"value\": %.3f, \"unit\": \"%s\", \"params\": {%s}}\n", metric, value, unit,
              params.c_str());
}

}  // namespace

int main() {
  const Outcome aware = Run(NetworkMode::kBestEffort, 42);
  const Outcome blind = Run(NetworkMode::kNone, 42);
  const std::string cluster = "\"spines\": " + std::to_string(kSpines) + ", \"leaves\": " +
                              std::to_string(kSpines * kLeavesPerSpine) + ", \"nodes\": " +
                              std::to_string(kSpines * kLeavesPerSpine * kNodesPerLeaf);
  auto per_job = [](uint64_t sum, uint64_t jobs) { return jobs == 0 ? 0.0 : static_cast<double>(sum) / jobs; };
  for (const auto& [name, o] : {std::pair<const char*, Outcome>{"network-aware", aware}, {"topology-blind", blind}}) {
    Print("ring_worst_hop_per_job", per_job(o.worst_hop_sum, o.jobs_placed), "hops",
          cluster + ", \"placement\": \"" + name + "\", \"jobs_placed\": " + std::to_string(o.jobs_placed) +
              ", \"cross_spine_jobs\": " + std::to_string(o.cross_spine_jobs) +
              ", \"ring_hops_per_job\": " + std::to_string(per_job(o.ring_hop_sum, o.jobs_placed)));
  }
  Print("ring_hops_aware_over_blind",
        per_job(aware.ring_hop_sum, aware.jobs_placed) / std::max(per_job(blind.ring_hop_sum, blind.jobs_placed), 1e-9),
        "ratio", cluster + ", \"lower_is_better\": true");
  return 0;
}
