// The FGD paper's experiment (../shared/data/alibaba-gpu-v2023/README.md):
// per seed, every pod of the list once in shuffled order, then copies drawn
// with replacement (arrivals.h), until the GPU demand that arrived reaches
// arrival_pct % of the cluster's GPUs; place them one at a time in that
// order through the production scheduler (no
// retries, no departures), and record the GPU allocation ratio at every
// whole percent of arrived demand and the fragmentation when it reaches
// 100 %. Seeds run in parallel threads; the scheduler is a pure function,
// so results do not depend on the thread count.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "control/scheduler/config.h"
#include "control/sim/trace.h"

namespace gpool::sim {

struct PaperOptions {
  uint32_t seeds = 10;
  uint64_t first_seed = 1;
  uint32_t arrival_pct = 130;
  uint32_t threads = 0;  // 0: one per hardware thread
};

struct SeedResult {
  uint64_t seed = 0;
  std::vector<double> alloc_pct;  // [p]: allocated GPU share, % of capacity, once p % of demand arrived
  double frag_pct_at_100 = 0;       // fragmentation, % of total GPU capacity
  double frag_idle_pct_at_100 = 0;  // fragmentation, % of idle GPU capacity
  uint64_t pods = 0;
  uint64_t placed = 0;
  // Where the unallocated GPU share sits when arrivals stop, % of capacity:
  // on nodes whose CPU no GPU shape of the workload fits in, on whole idle
  // GPUs elsewhere, and on partly used GPUs elsewhere.
  double left_cpu_bound_pct = 0;
  double left_idle_gpus_pct = 0;
  double left_partial_gpus_pct = 0;
  // The devices holding shares when arrivals stop and the share left free
  // on them (% of capacity), and the same for an offline first-fit-
  // decreasing packing of the shares placed (share_packing.h).
  double share_devices = 0;
  double share_free_pct = 0;
  double ffd_share_devices = 0;
  double ffd_share_free_pct = 0;
  // GPU demand that found no node, % of capacity, by the pod's GPU count
  // (0: a share of one GPU).
  std::map<uint32_t, double> failed_pct_by_gpus;
};

struct PolicyResult {
  std::string policy;
  std::vector<SeedResult> seeds;
  double MeanAllocAt(uint32_t pct) const;
  double MeanFragAt100() const;
  double MeanFragIdleAt100() const;
  double Mean(double SeedResult::*field) const;
};

PolicyResult RunPaperExperiment(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                                const std::string& policy, const scheduler::SchedulerConfig& config,
                                const PaperOptions& options);

// Fragmentation of the empty cluster for the pod list's workload, % of GPU capacity.
double EmptyClusterFragPct(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods);

}  // namespace gpool::sim
