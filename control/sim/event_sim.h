// Event-driven simulation: jobs arrive at their times, wait, run for their
// durations and leave, while the production scheduler runs a cycle every
// cycle_ms of simulated time (skipping ahead when nothing can change:
// nothing waiting, or the last cycle placed nothing and no job arrives or
// ends before the next). Evicted (preempted or reclaimed) jobs go back to
// waiting whole, as the coordinator requeues them. No wall clock anywhere:
// the same inputs give the same run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "control/scheduler/config.h"
#include "control/sim/trace.h"
#include "control/sim/workload.h"

namespace gpool::sim {

struct EventOptions {
  int64_t cycle_ms = 1000;
};

// One scheduling cycle's picture.
struct SeriesPoint {
  int64_t t_ms = 0;
  double alloc_pct = 0;  // allocated GPU share, % of capacity
  double frag_pct = 0;   // fragmentation for the workload, % of capacity
  size_t waiting = 0;
  size_t running = 0;
  uint64_t preemptions = 0;  // evictions so far
  double wait_s[3] = {-1, -1, -1};  // mean wait of jobs started this cycle, by class low/medium/high; -1 none
};

struct EventRun {
  std::vector<SeriesPoint> series;
  uint64_t jobs = 0;
  uint64_t started = 0;
  uint64_t finished = 0;
  uint64_t preemptions = 0;
  uint64_t cycles = 0;
  int64_t end_ms = 0;
  std::vector<double> waits_s[3];  // per class, of every start
  double mean_alloc_pct = 0;       // time-weighted over the run
};

EventRun RunEvents(const std::vector<TraceNode>& nodes, const std::vector<SimJob>& jobs,
                   const std::vector<topology::WorkloadShape>& workload, const scheduler::SchedulerConfig& config,
                   const EventOptions& options);

nlohmann::json EventSummaryJson(const EventRun& run);
// t_s, alloc_pct, frag_pct, waiting, running, preemptions, wait_s_low, wait_s_medium, wait_s_high
std::string TimeSeriesCsv(const EventRun& run);

}  // namespace gpool::sim
