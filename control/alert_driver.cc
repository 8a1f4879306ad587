#include "control/alert_driver.h"

#include <spdlog/spdlog.h>

#include "control/views.h"
#include "protocol/messages_worker.h"

namespace gpool::control {

namespace {

state::AlertCmd Firing(std::string key, std::string rule, std::string severity, std::string message) {
  state::AlertCmd cmd;
  cmd.key = std::move(key);
  cmd.firing = true;
  cmd.rule = std::move(rule);
  cmd.severity = std::move(severity);
  cmd.message = std::move(message);
  return cmd;
}

}  // namespace

void AlertDriver::QueueWait(int64_t now_wall_ms, std::map<std::string, state::AlertCmd>& want) const {
  if (rules_.queue_wait_ms <= 0) return;
  for (uint64_t id : state_.pending_jobs()) {
    const state::JobRecord* job = state_.FindJob(JobId(id));
    if (job == nullptr || job->submit_ms == 0) continue;
    const int64_t waited = now_wall_ms - job->submit_ms;
    if (waited < rules_.queue_wait_ms) continue;
    const std::vector<std::string> reasons = PendingTexts(*job);
    state::AlertCmd cmd = Firing("queue-wait/job-" + std::to_string(id), "queue-wait", "warning",
                                 "job " + std::to_string(id) + " (" + job->spec.name + ", queue " + job->spec.queue +
                                     ") pending for " + std::to_string(waited / 60'000) + " min: " +
                                     (reasons.empty() ? std::string("not yet considered") : reasons.front()));
    cmd.job = id;
    want.emplace(cmd.key, std::move(cmd));
  }
}

void AlertDriver::QuotaUse(std::map<std::string, state::AlertCmd>& want) const {
  if (rules_.quota_used_pct == 0) return;
  const std::map<std::string, Quota> allocated = state_.QueueAllocations();
  for (const auto& [name, queue] : state_.queues()) {
    auto held = allocated.find(name);
    if (held == allocated.end()) continue;
    for (const auto& [resource, limit] : queue.spec.capability) {
      if (limit == 0) continue;
      auto used = held->second.find(resource);
      if (used == held->second.end() || used->second * 100 < limit * rules_.quota_used_pct) continue;
      state::AlertCmd cmd = Firing("quota/" + name + "/" + resource, "quota",
                                   used->second >= limit ? "degraded" : "warning",
                                   "queue " + name + " holds " + std::to_string(used->second) + " of its " +
                                       std::to_string(limit) + " " + resource + " (capability)");
      want.emplace(cmd.key, std::move(cmd));
    }
  }
}

void AlertDriver::LowUtilisation(int64_t now_mono_ms, std::map<std::string, state::AlertCmd>& want) {
  if (rules_.low_util_pct == 0) {
    idle_since_.clear();
    return;
  }
  std::map<TaskId, int64_t> still_idle;
  for (const TaskId& id : state_.ActiveTasks()) {
    const state::TaskRecord* task = state_.FindTask(id);
    if (task == nullptr || task->state != TaskState::kRunning || task->gpu_indices.empty()) continue;
    const WorkerConnection* worker = workers_.Find(task->node);
    if (worker == nullptr) continue;
    // All of its GPUs measured and below the threshold; any GPU busy or not
    // measured: not idle.
    bool idle = true;
    uint32_t busiest = 0;
    for (uint32_t index : task->gpu_indices) {
      auto sample = std::find_if(worker->gpus.begin(), worker->gpus.end(),
                                 [index](const GpuUtilization& g) { return g.index == index; });
      if (sample == worker->gpus.end() || sample->utilization_pct >= rules_.low_util_pct) {
        idle = false;
        break;
      }
      busiest = std::max(busiest, sample->utilization_pct);
    }
    if (!idle) continue;
    auto since = idle_since_.find(id);
    const int64_t start = since == idle_since_.end() ? now_mono_ms : since->second;
    still_idle[id] = start;
    if (now_mono_ms - start < rules_.low_util_ms) continue;
    state::AlertCmd cmd = Firing("low-utilisation/task-" + id.ToString(), "low-utilisation", "warning",
                                 "task " + id.ToString() + " on " + task->node + " holds " +
                                     std::to_string(task->gpu_indices.size()) + " GPU(s) at most " +
                                     std::to_string(busiest) + "% busy for " +
                                     std::to_string((now_mono_ms - start) / 60'000) + " min");
    cmd.job = id.job.value();
    cmd.node = task->node;
    want.emplace(cmd.key, std::move(cmd));
  }
  idle_since_ = std::move(still_idle);
}

std::map<std::string, state::AlertCmd> AlertDriver::Evaluate(int64_t now_mono_ms) {
  std::map<std::string, state::AlertCmd> want;
  QueueWait(clock_->WallMs(), want);
  QuotaUse(want);
  LowUtilisation(now_mono_ms, want);
  return want;
}

void AlertDriver::Tick(int64_t now_ms) {
  if (in_flight_ > 0 || now_ms < next_check_ms_) return;
  next_check_ms_ = now_ms + rules_.check_every_ms;
  std::map<std::string, state::AlertCmd> want = Evaluate(now_ms);
  std::vector<state::AlertCmd> changes;
  for (auto& [key, cmd] : want) {
    if (state_.alerts().count(key) == 0) changes.push_back(std::move(cmd));
  }
  for (const auto& [key, firing] : state_.alerts()) {
    if (want.count(key) != 0) continue;
    state::AlertCmd resolved;
    resolved.key = key;
    resolved.firing = false;
    changes.push_back(std::move(resolved));
  }
  if (changes.size() > rules_.max_changes_per_check) changes.resize(rules_.max_changes_per_check);
  for (auto& cmd : changes) {
    spdlog::info("alert {} key={} message=\"{}\"", cmd.firing ? "firing" : "resolved", cmd.key, cmd.message);
    ++in_flight_;
    proposer_.Propose(std::move(cmd), [this, generation = generation_](const state::ApplyResult& result) {
      if (generation != generation_) return;
      --in_flight_;
      if (!result.status.ok()) spdlog::warn("alert not recorded error=\"{}\"", result.status.ToString());
    });
  }
}

void AlertDriver::Reset() {
  ++generation_;
  in_flight_ = 0;
  next_check_ms_ = 0;
  idle_since_.clear();
}

}  // namespace gpool::control
