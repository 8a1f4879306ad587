#include "control/scheduler_driver.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace gpool::control {

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
  if (!dirty_ || in_flight_ || now_ms - last_run_ms_ < options_.interval_ms) return false;
  dirty_ = false;
  last_run_ms_ = now_ms;
  state_.RefreshView(view_, view_cursor_, options_.wall_clock != nullptr ? options_.wall_clock->WallMs() : 0);
  if (view_.pending.empty()) return false;
  ++cycles_;
  if (options_.background) {
    computing_generation_ = generation_;
    std::promise<scheduler::Plan> result;
    computing_ = result.get_future();
    // The plan is set before on_cycle_done runs, so a loop woken by it finds
    // the cycle finished.
    cycle_thread_ = std::thread([view = &view_, policy = options_.policy, done = options_.on_cycle_done,
                                 result = std::move(result)]() mutable {
      try {
        result.set_value(scheduler::Schedule(*view, policy));
      } catch (...) {
        result.set_exception(std::current_exception());  // rethrown by get() on the loop, as before
      }
      if (done) done();
    });
    return false;
  }
  return Propose(scheduler::Schedule(view_, options_.policy), now_ms);
}

bool SchedulerDriver::Propose(scheduler::Plan plan, int64_t now_ms) {
  // The plan may come from a view that has aged (a background cycle); apply
  // re-validates every bind and eviction, so that is safe.
  state::ApplyPlanCmd cmd;
  for (auto& bind : plan.binds) {
    cmd.binds.push_back(state::PlanBind{bind.job.value(), bind.task_index, std::move(bind.node),
                                        std::move(bind.gpu_indices), bind.cpu_milli, bind.memory_mib,
                                        std::move(bind.grant), bind.numa_node});
  }
  for (auto& eviction : plan.evictions) {
    spdlog::info("evicting job={} task={} for_job={} reason=\"{}\"", eviction.job.value(), eviction.task_index,
                 eviction.for_job.value(), eviction.reason);
    cmd.evictions.push_back(state::PlanEviction{eviction.job.value(), eviction.task_index, eviction.for_job.value(),
                                                std::move(eviction.reason)});
  }
  for (auto& pending : plan.pending) {
    const auto* job = state_.FindJob(pending.job);
    if (job != nullptr && job->reasons() == pending.reasons && job->legacy_reasons().empty()) {
      continue;  // nothing new to record
    }
    cmd.reasons.push_back(state::PlanReasons{pending.job.value(), std::move(pending.reasons), {}});
  }
  if (cmd.binds.empty() && cmd.evictions.empty() && cmd.reasons.empty()) return false;
  if (cmd.binds.empty() && cmd.evictions.empty() && now_ms - last_reasons_ms_ < options_.reasons_interval_ms) {
    reasons_deferred_ = true;  // run again once the interval has passed
    return false;
  }
  if (!cmd.reasons.empty()) last_reasons_ms_ = now_ms;
  spdlog::debug("scheduling cycle binds={} evictions={} pending={}", cmd.binds.size(), cmd.evictions.size(),
                plan.pending.size());
  in_flight_ = true;
  proposer_.Propose(std::move(cmd), [this](const state::ApplyResult& result) {
    in_flight_ = false;
    if (result.jobs_rejected > 0) {
      spdlog::info("plan partly stale binds_applied={} jobs_rejected={}", result.binds_applied, result.jobs_rejected);
    }
  });
  return true;
}

}  // namespace gpool::control
