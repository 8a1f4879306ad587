// ClusterState: retention (retention.h). ForgetJobsCmd removes finished jobs
// from the live state and keeps their summary and usage.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "control/state/cluster_state.h"
#include "control/state/cluster_state_internal.h"

namespace gpool::state {
namespace {

// A job that may be forgotten: finished, and nothing of it still held or
// owed to a worker (a finished job's tasks are all ended; checked anyway,
// since forgetting a record the nodes or the dispatcher still point to
// would corrupt them).
bool RetainedJobIsDone(const JobRecord& job) {
  if (!IsTerminal(job.state)) return false;
  return std::none_of(job.tasks.begin(), job.tasks.end(),
                      [](const TaskRecord& task) { return HoldsResources(task.state) || task.command_seq != 0; });
}

uint64_t RetainedJobGpuMs(const JobRecord& job) {
  uint64_t total = 0;
  for (const auto& task : job.tasks) {
    if (task.start_ms == 0) continue;
    const int64_t end = task.finish_ms != 0 ? task.finish_ms : job.finish_ms;
    if (end > task.start_ms) total += task.gpu_indices.size() * static_cast<uint64_t>(end - task.start_ms);
  }
  return total;
}

}  // namespace

std::vector<uint64_t> ClusterState::Forgettable(int64_t finished_before_ms, uint64_t keep_newest) const {
  // Oldest finished first: (finish time, id), the same order on every replica.
  std::vector<std::pair<int64_t, uint64_t>> finished;
  finished.reserve(jobs_in_state(JobState::kSucceeded) + jobs_in_state(JobState::kFailed) +
                   jobs_in_state(JobState::kCancelled));
  for (const auto& [id, job] : jobs_) {
    if (RetainedJobIsDone(job)) finished.emplace_back(job.finish_ms, id);
  }
  std::sort(finished.begin(), finished.end());
  const size_t over_count = finished.size() > keep_newest ? finished.size() - keep_newest : 0;
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < finished.size(); ++i) {
    if (i >= over_count && finished[i].first >= finished_before_ms) break;
    ids.push_back(finished[i].second);
  }
  return ids;
}

bool ClusterState::AnyForgettable(int64_t finished_before_ms, uint64_t keep_newest) const {
  // Done jobs are finished ones (terminal), so neither test can pass while
  // the terminal jobs are no more than keep_newest and none finished before
  // the cutoff.
  const uint64_t terminal = uint64_t{jobs_in_state(JobState::kSucceeded)} + jobs_in_state(JobState::kFailed) +
                            jobs_in_state(JobState::kCancelled);
  if (terminal <= keep_newest && finish_floor_ms_ >= finished_before_ms) return false;
  uint64_t finished = 0;
  int64_t floor = INT64_MAX;
  bool any = false;
  for (const auto& [id, job] : jobs_) {
    if (IsTerminal(job.state)) floor = std::min(floor, job.finish_ms);
    if (any || !RetainedJobIsDone(job)) continue;
    if (job.finish_ms < finished_before_ms || ++finished > keep_newest) any = true;
  }
  finish_floor_ms_ = floor;
  return any;
}

ApplyResult ClusterState::ApplyForgetJobs(const ForgetJobsCmd& cmd) {
  ApplyResult result;
  for (uint64_t id : Forgettable(cmd.finished_before_ms, cmd.keep_newest)) {
    auto it = jobs_.find(id);
    Forget(it->second);
    session_jobs_.erase(id);
    scale_jobs_.erase(id);
    jobs_.erase(it);
    ++result.jobs_forgotten;
  }
  return result;
}

void ClusterState::Forget(const JobRecord& job) {
  ForgottenJob summary;
  summary.id = job.id.value();
  summary.user = job.spec.user;
  summary.queue = job.spec.queue;
  summary.state = static_cast<uint32_t>(job.state);
  summary.submit_ms = job.submit_ms;
  summary.start_ms = job.start_ms;
  summary.finish_ms = job.finish_ms;
  summary.gpu_ms = RetainedJobGpuMs(job);

  UsageTotal& total = usage_[{summary.queue, summary.user}];
  total.queue = summary.queue;
  total.user = summary.user;
  ++total.jobs;
  total.succeeded += job.state == JobState::kSucceeded;
  total.failed += job.state == JobState::kFailed;
  total.cancelled += job.state == JobState::kCancelled;
  total.gpu_ms += summary.gpu_ms;
  total.last_finish_ms = std::max(total.last_finish_ms, summary.finish_ms);

  // The indexes that name the job (pending_ and the commands-due log never
  // hold a finished one).
  if (!job.idempotency_key.empty()) {
    auto [first, last] = idempotency_.equal_range(internal::KeyHash(job.idempotency_key));
    for (auto it = first; it != last; ++it) {
      if (it->second == job.id.value()) {
        idempotency_.erase(it);
        break;
      }
    }
  }
  CountJobState(job, job.state, -1);
  ++forgotten_count_;
  forgotten_.push_back(std::move(summary));
  if (forgotten_.size() > kMaxSummaries) forgotten_.pop_front();
}

bool ClusterState::WasForgotten(JobId id) const {
  return id.value() != 0 && id.value() < next_job_id_ && FindJob(id) == nullptr;
}

const ForgottenJob* ClusterState::FindForgotten(JobId id) const {
  // Forgotten in (finish time, id) order, which is not quite id order: a
  // short scan of the ring, only ever for a `gpool job N` of a forgotten job.
  for (auto it = forgotten_.rbegin(); it != forgotten_.rend(); ++it) {
    if (it->id == id.value()) return &*it;
  }
  return nullptr;
}

}  // namespace gpool::state
