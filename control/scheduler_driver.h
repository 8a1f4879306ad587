// SchedulerDriver: runs scheduling cycles and proposes their plans.
//
// A cycle runs when something changed since the last one (any applied
// command marks it dirty) and at most once per interval. It snapshots the
// state into a ClusterView, calls the pure scheduler, and proposes one
// ApplyPlan command with the binds and any pending reasons that changed.
// Apply re-validates the plan, so a plan made from a view that went stale in
// the meantime cannot over-allocate. One plan is in flight at a time.
//
// The view is kept between cycles while jobs wait and refreshed in place
// (ClusterState::RefreshView): a node whose tasks changed has its free
// capacity updated without reallocating anything, and only nodes whose spec,
// state, labels or pool changed are rebuilt. On a thousand-node cluster a
// full build was most of what a cycle cost the loop; rebuilding in place
// also keeps the heap from fragmenting (nodes rebuilt cycle after cycle
// scatter their allocations between the job records). The view is dropped
// once no job has been pending for `keep_view_ms` (0: at once), so an idle
// coordinator holds no copy of its cluster. A cycle starts only when some
// job is pending.
//
// The view is refreshed on the loop thread, and its running part walks every
// task holding resources: tens of milliseconds at 100,000 live tasks. So a
// cycle also waits until kViewPacing times the last refresh has passed since
// the last one began (CycleGapMs): building views takes at most about a
// fifth of the loop's time, whatever the cluster's size, and a small
// cluster, whose refresh costs microseconds, keeps its 10 ms interval.
//
// With `background`, the pure scheduler runs on its own thread over the
// view, so a long cycle (a large cluster with a deep backlog) never holds up
// the loop that serves clients, workers and Raft heartbeats; the plan is
// proposed from the loop when it is ready, and `on_cycle_done` (called on
// the scheduling thread) lets the loop wake for it at once.
//
// Thread-safety: none; the coordinator's loop thread owns it. While a
// background cycle runs, the view belongs to it: the loop refreshes the view
// only after collecting the cycle's result.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <thread>

#include "control/metrics/metric_sets.h"
#include "control/ports.h"
#include "control/scheduler/scheduler.h"
#include "protocol/base/clock.h"

namespace gpool::control {

struct SchedulerDriverOptions {
  scheduler::SchedulerConfig policy;
  const Clock* wall_clock = nullptr;  // dates how long jobs have waited; null: they never age
  bool background = false;            // run cycles on a scheduling thread
  int64_t interval_ms = 10;
  // Pending reasons change whenever capacity does ("3 nodes" becomes "4
  // nodes"); a plan that carries only reasons is committed at most this often
  // so explanations stay current without flooding the log.
  int64_t reasons_interval_ms = 1000;
  // How long the view is kept once no job is pending (0: dropped at once).
  int64_t keep_view_ms = 0;
  // Called on the scheduling thread when a background cycle has its plan.
  std::function<void()> on_cycle_done;
  // Cycle durations, decisions and evictions for /metrics; null: not kept.
  SchedulingMetrics* metrics = nullptr;
};

// The least time between two cycles' starts: the interval, or kViewPacing
// times what the last view refresh took, whichever is longer.
inline constexpr int64_t kViewPacing = 4;
int64_t CycleGapMs(int64_t interval_ms, int64_t last_refresh_us);

class SchedulerDriver {
 public:
  SchedulerDriver(const SchedulerDriverOptions& options, const state::ClusterState& state, Proposer& proposer)
      : options_(options), state_(state), proposer_(proposer) {}
  ~SchedulerDriver();

  void MarkDirty() { dirty_ = true; }
  // Leadership changed: the plan in flight (if any) will never report back
  // here as committed, and the next cycle should run at once.
  void Reset() {
    dirty_ = true;
    in_flight_ = false;
    ++generation_;  // a background cycle started before is dropped when it ends
  }
  // Takes effect from the next cycle.
  void SetPolicy(const scheduler::SchedulerConfig& policy) {
    options_.policy = policy;
    dirty_ = true;
  }
  // Returns true when it proposed a plan.
  bool Tick(int64_t now_ms);

  uint64_t cycles() const { return cycles_; }
  int64_t last_refresh_us() const { return last_refresh_us_; }
  // Whether a view is kept between cycles (tests; memory accounting).
  bool holds_view() const { return view_cursor_.generation != 0; }

 private:
  bool Propose(scheduler::Plan plan, int64_t now_ms);
  void Record(const scheduler::Plan& plan, int64_t cycle_us);
  void DropView();

  SchedulerDriverOptions options_;
  const state::ClusterState& state_;
  Proposer& proposer_;
  bool dirty_ = true;
  bool in_flight_ = false;
  int64_t last_run_ms_ = INT64_MIN / 2;
  int64_t last_reasons_ms_ = INT64_MIN / 2;
  bool reasons_deferred_ = false;
  uint64_t cycles_ = 0;
  int64_t last_pending_ms_ = 0;
  int64_t last_refresh_us_ = 0;  // what the last RefreshView took on the loop
  // Declared before computing_: a running background cycle reads it, and
  // members are destroyed in reverse order.
  topology::ClusterView view_;
  state::ClusterState::ViewCursor view_cursor_;
  std::future<scheduler::Plan> computing_;
  std::thread cycle_thread_;
  uint64_t generation_ = 0;
  uint64_t computing_generation_ = 0;
  // How long the background cycle took; written by the scheduling thread
  // before it sets the plan, read on the loop after the plan is taken.
  int64_t cycle_us_ = 0;
};

}  // namespace gpool::control
