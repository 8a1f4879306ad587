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
  std::erase_if(started_, [this](uint64_t id) { return state_.FindJob(JobId(id)) == nullptr; });
}

std::string EvictionCause(const std::string& reason) {
  if (reason.rfind("preempted", 0) == 0) return "preempt";
  if (reason.rfind("reclaimed", 0) == 0) return "reclaim";
  return "other";
}

}  // namespace gpool::control
