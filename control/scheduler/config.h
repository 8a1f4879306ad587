// SchedulerConfig: which actions a scheduling cycle runs, in which order,
// and the knobs of the plugins they consult.
//
// Read from a small text file at start and again on SIGHUP; a file that does
// not parse or validate is refused whole, with the line and reason, and the
// scheduler keeps the configuration it had. Every field has a default, so an
// empty file (or none) is the default policy. Format (comments start with #):
//
//   actions = enqueue, allocate, backfill, preempt, reclaim
//
//   [nodeorder]
//   strategy = fragmentation      # binpack, spread, ... (see Strategy)
//   gpu_weight = 10
//   cpu_weight = 1
//   memory_weight = 1
//   prefer_label_weight = 100     # per matching preferred label
//   candidates = 32               # feasible nodes scored per task
//
//   [fairness]
//   drf = true                    # false: queues in name order, jobs FIFO
//
//   [gpu_cpu_ratio]
//   cpu_milli_per_free_gpu = 1000   # CPU a CPU-only task may not take from a GPU node, per free GPU
//   memory_mib_per_free_gpu = 4096
//
//   [reservation]
//   enabled = true
//   min_gpus = 16                 # jobs this large get freed nodes held for them
//   small_job_bound_ms = 600000   # jobs waiting longer than this may use held nodes anyway
//   starve_after_ms = 600000      # a large job is starving (nodes held) only after waiting this long
//   max_per_pool = 2              # starving jobs holding nodes at once, per pool
//
// Sections named [health] or [health.*] belong to the health policy and are
// skipped here (control/health/policy_config.h reads them from the same file).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"

namespace gpool::scheduler {

// How candidate nodes are scored (control/scheduler/node_score.cc):
//   binpack / spread   fullest / emptiest node by weighted GPU, CPU, memory use
//   fragmentation      the node (and devices) whose free GPU share the
//                      workload can least use grows the least, ties to the
//                      fullest node (FGD's measure plus gpool's packed and
//                      host measures, see fragmentation.h)
// and, to compare with (the ATC'23 FGD paper's baselines, for gpool-sim):
//   fgd, random, dot-product, gpu-packing, gpu-clustering, best-fit
enum class Strategy {
  kBinpack,
  kSpread,
  kFragmentation,
  kFgd,
  kRandom,
  kDotProduct,
  kGpuPacking,
  kGpuClustering,
  kBestFit,
};
std::string_view StrategyName(Strategy strategy);
Result<Strategy> StrategyFromName(std::string_view name);

// enqueue:  admits jobs whose queue chain has room under its capability and
//           that could ever fit; the rest get their reason and wait.
// allocate: places admitted jobs on free capacity (gang minimums at once),
//           queues by DRF, holding nodes for a starving large job.
// backfill: grows elastic jobs past their minimum into what is left idle.
// preempt:  a high-class job that did not fit evicts low-class tasks of its
//           own queue, only where it will then fit.
// reclaim:  a queue below its deserved share (or guarantee) evicts work that
//           other queues borrowed beyond theirs.
enum class Action { kEnqueue, kAllocate, kBackfill, kPreempt, kReclaim };
std::string_view ActionName(Action action);
Result<Action> ActionFromName(std::string_view name);

struct NodeOrderConfig {
  // fragmentation by default: it keeps room for the shapes the cluster runs
  // (GPU shares pack by the LP's prices, multi-GPU tasks keep nodes whole)
  // and, where every task is whole GPUs, packs like binpack (a task on a
  // fuller node strands no larger shape; ties go to the fullest node).
  // Measured in docs/simulator.md ("The default placement").
  Strategy strategy = Strategy::kFragmentation;
  uint32_t gpu_weight = 10;
  uint32_t cpu_weight = 1;
  uint32_t memory_weight = 1;
  uint32_t prefer_label_weight = 100;
  uint32_t candidates = 32;
};

struct FairnessConfig {
  bool drf = true;
};

struct GpuCpuRatioConfig {
  uint64_t cpu_milli_per_free_gpu = 1000;
  uint64_t memory_mib_per_free_gpu = 4096;
};

struct ReservationConfig {
  bool enabled = true;
  uint32_t min_gpus = 16;
  int64_t small_job_bound_ms = 600'000;
  // A large job is starving, and has nodes held for it, only once it has
  // waited this long (a job that will fit in a minute must not idle nodes).
  int64_t starve_after_ms = 600'000;
  uint32_t max_per_pool = 2;  // starving jobs holding nodes at once, per pool
};

struct SchedulerConfig {
  std::vector<Action> actions = {Action::kEnqueue, Action::kAllocate, Action::kBackfill, Action::kPreempt,
                                 Action::kReclaim};
  NodeOrderConfig node_order;
  FairnessConfig fairness;
  GpuCpuRatioConfig gpu_cpu_ratio;
  ReservationConfig reservation;
};

// Errors name the line: "line 7: [nodeorder] strategy: unknown placement
// strategy 'fastest' (expected one of binpack, spread, fragmentation, fgd, random, dot-product, gpu-packing, gpu-clustering, best-fit)".
Result<SchedulerConfig> ParseSchedulerConfig(std::string_view text);
Result<SchedulerConfig> LoadSchedulerConfig(const std::string& path);
// The configuration in the file format; parsing it gives the same config.
std::string RenderSchedulerConfig(const SchedulerConfig& config);

}  // namespace gpool::scheduler
