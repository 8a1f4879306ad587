#include "control/metrics/control_metrics.h"

namespace gpool::control {

void ControlMetrics::NodeConnected(const std::string&) { ++workers.registrations; }

void ControlMetrics::TaskSettled(const TaskId& task) {
  ++workers.task_events;
  const state::TaskRecord* record = state_.FindTask(task);
  if (record == nullptr) return;
  if (record->state == TaskState::kLost) ++workers.tasks_lost;
  const state::JobRecord* job = state_.FindJob(task.job);
  if (job == nullptr || job->start_ms == 0 || job->submit_ms == 0) return;
  if (!started_.insert(task.job.value()).second) return;  // counted at its first start
  submit_to_running_seconds.Observe(static_cast<double>(job->start_ms - job->submit_ms) / 1000.0);
}

void ControlMetrics::Prune() {
  // Ids below the oldest job still held are forgotten ones: a range, not a
  // lookup of every job ever started at each scrape (issue 49: 200,000 of
  // them held the leader's loop 100-300 ms a scrape). Jobs forgotten out of
  // id order stay until the oldest goes; retention bounds them.
  const uint64_t oldest = state_.jobs().empty() ? UINT64_MAX : state_.jobs().begin()->first;
  started_.erase(started_.begin(), started_.lower_bound(oldest));
}

std::string EvictionCause(const std::string& reason) {
  if (reason.rfind("preempted", 0) == 0) return "preempt";
  if (reason.rfind("reclaimed", 0) == 0) return "reclaim";
  return "other";
}

}  // namespace gpool::control
