#include "control/scheduler_driver.h"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

namespace gpool::control {

int64_t CycleGapMs(int64_t interval_ms, int64_t last_refresh_us) {
  return std::max(interval_ms, kViewPacing * last_refresh_us / 1000);
}

SchedulerDriver::~SchedulerDriver() {
  if (cycle_thread_.joinable()) cycle_thread_.join();  // the cycle reads view_
}

void SchedulerDriver::DropView() {
  view_ = topology::ClusterView{};
  view_cursor_ = state::ClusterState::ViewCursor{};
}

bool SchedulerDriver::Tick(int64_t now_ms) {
  if (computing_.valid()) {
    // A cycle runs on the scheduling thread; the loop keeps serving meanwhile.
    if (computing_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
    scheduler::Plan plan = computing_.get();
    cycle_thread_.join();  // it has set the plan; at most on_cycle_done is left to run
    if (computing_generation_ != generation_) return false;  // leadership changed meanwhile
    Record(plan, cycle_us_);
    return Propose(std::move(plan), now_ms);
  }
  if (reasons_deferred_ && now_ms - last_reasons_ms_ >= options_.reasons_interval_ms) {
    reasons_deferred_ = false;
    dirty_ = true;
  }
  if (state_.pending_jobs().empty()) {
    // Nothing to place: no cycle, and after a while no view either.
    if (holds_view() && now_ms - last_pending_ms_ >= options_.keep_view_ms) DropView();
    return false;
  }
  last_pending_ms_ = now_ms;
  if (!dirty_ || in_flight_ || now_ms - last_run_ms_ < CycleGapMs(options_.interval_ms, last_refresh_us_)) return false;
  dirty_ = false;
  last_run_ms_ = now_ms;
  const auto refresh_start = std::chrono::steady_clock::now();
  state_.RefreshView(view_, view_cursor_, options_.wall_clock != nullptr ? options_.wall_clock->WallMs() : 0);
  last_refresh_us_ =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - refresh_start).count();
  if (options_.metrics != nullptr) options_.metrics->view_refresh_seconds.Observe(static_cast<double>(last_refresh_us_) / 1e6);
  if (view_.pending.empty()) return false;
  ++cycles_;
  if (options_.background) {
    computing_generation_ = generation_;
    std::promise<scheduler::Plan> result;
    computing_ = result.get_future();
    // The plan is set before on_cycle_done runs, so a loop woken by it finds
    // the cycle finished.
    cycle_thread_ = std::thread([this, view = &view_, policy = options_.policy, done = options_.on_cycle_done,
                                 result = std::move(result)]() mutable {
      try {
        const auto start = std::chrono::steady_clock::now();
        scheduler::Plan plan = scheduler::Schedule(*view, policy);
        cycle_us_ = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start)
                        .count();
        result.set_value(std::move(plan));
      } catch (...) {
        result.set_exception(std::current_exception());  // rethrown by get() on the loop, as before
      }
      if (done) done();
    });
    return false;
  }
  const auto start = std::chrono::steady_clock::now();
  scheduler::Plan plan = scheduler::Schedule(view_, options_.policy);
  Record(plan, std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
  return Propose(std::move(plan), now_ms);
}

void SchedulerDriver::Record(const scheduler::Plan& plan, int64_t cycle_us) {
  if (options_.metrics == nullptr) return;
  SchedulingMetrics& m = *options_.metrics;
  ++m.cycles;
  m.binds += plan.binds.size();
  m.cycle_seconds.Observe(static_cast<double>(cycle_us) / 1e6);
  m.decisions_per_cycle.Observe(static_cast<double>(plan.binds.size()));
  for (const auto& eviction : plan.evictions) ++m.evictions_by_cause[EvictionCause(eviction.reason)];
}

bool SchedulerDriver::Propose(scheduler::Plan plan, int64_t now_ms) {
  // The plan may come from a view that has aged (a background cycle); apply
  // re-validates every bind and eviction, so that is safe.
  for (const auto& eviction : plan.evictions) {
    spdlog::info("evicting job={} task={} for_job={} reason=\"{}\"", eviction.job.value(), eviction.task_index,
                 eviction.for_job.value(), eviction.reason);
  }
  const size_t considered = plan.pending.size();
  std::erase_if(plan.pending, [this](const scheduler::PendingReasons& pending) {
    const auto* job = state_.FindJob(pending.job);
    return job != nullptr && job->reasons() == pending.reasons && job->legacy_reasons().empty();  // nothing new
  });
  if (plan.binds.empty() && plan.evictions.empty() && plan.pending.empty()) return false;
  if (plan.binds.empty() && plan.evictions.empty() && now_ms - last_reasons_ms_ < options_.reasons_interval_ms) {
    reasons_deferred_ = true;  // run again once the interval has passed
    return false;
  }
  if (!plan.pending.empty()) last_reasons_ms_ = now_ms;
  spdlog::debug("scheduling cycle binds={} evictions={} pending={}", plan.binds.size(), plan.evictions.size(),
                considered);
  in_flight_ = true;
  proposer_.Propose(std::move(plan)  /* the plan is the ApplyPlan command */, [this](const state::ApplyResult& result) {
    in_flight_ = false;
    if (result.jobs_rejected > 0) {
      spdlog::info("plan partly stale binds_applied={} jobs_rejected={}", result.binds_applied, result.jobs_rejected);
    }
  });
  return true;
}

}  // namespace gpool::control
