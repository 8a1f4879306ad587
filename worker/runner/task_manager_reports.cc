// TaskManager's answers about its tasks: what RegisterNode reports, which
// are running, their terminal states and their logs' tails. Apart from
// task_manager.cc, which keeps the life cycle, to keep each file small.
#include <algorithm>

#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "worker/runner/log_tail.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_manager.h"

namespace gpool::worker {

Result<int64_t> TaskManager::RunningPid(const TaskId& task) const {
  auto it = tasks_.find(task);
  if (it == tasks_.end() || !it->second.bound) {
    return Status::NotFound("task " + task.ToString() + " is not on node " + options_.node.name);
  }
  if (it->second.phase != Phase::kRunning || it->second.pid <= 0 || !by_pid_.count(it->second.pid)) {
    return Status::FailedPrecondition("task " + task.ToString() + " is not running on node " + options_.node.name);
  }
  return it->second.pid;
}

TaskState TaskManager::TerminalState(const Task& task) const {
  switch (task.phase) {
    case Phase::kPending:
    case Phase::kRunning:
      return TaskState::kRunning;
    case Phase::kExited:
      if (task.preempted) return TaskState::kCancelled;
      if (task.lost) return TaskState::kLost;
      return task.exit_code == 0 && task.signal == 0 ? TaskState::kSucceeded : TaskState::kFailed;
    case Phase::kFailed:
      return task.lost ? TaskState::kLost : TaskState::kFailed;
    case Phase::kCancelled:
      return TaskState::kCancelled;
  }
  return TaskState::kFailed;
}

bool TaskManager::Idle() const {
  if (!by_pid_.empty()) return false;
  for (const TaskId& id : to_start_) {
    auto it = tasks_.find(id);
    if (it != tasks_.end() && it->second.phase == Phase::kPending) return false;
  }
  return true;
}

std::vector<TaskId> TaskManager::Running() const {
  std::vector<TaskId> out;
  for (const auto& [id, task] : tasks_) {
    if (task.phase == Phase::kPending || task.phase == Phase::kRunning) out.push_back(id);
  }
  return out;
}

bool TaskManager::GpuHeld(uint32_t index) const {
  for (const auto& [id, task] : tasks_) {
    if (task.phase != Phase::kPending && task.phase != Phase::kRunning) continue;
    const auto& gpus = task.bind.gpu_indices;
    if (std::find(gpus.begin(), gpus.end(), index) != gpus.end()) return true;
  }
  return false;
}

std::vector<TaskReport> TaskManager::Reports() const {
  std::vector<TaskReport> out;
  for (const auto& [id, task] : tasks_) {
    const bool live = task.phase == Phase::kPending || task.phase == Phase::kRunning;
    if (!live && task.exit_acked) continue;
    TaskReport report;
    report.task = id;
    report.state = TerminalState(task);
    report.pid = task.pid;
    report.exit_code = live ? 0 : task.exit_code;
    report.signal = live ? 0 : task.signal;
    // Times from the events still unacknowledged (what the coordinator may
    // not have heard), for its usage accounting.
    for (const auto& [seq, event] : outbox_) {
      if (event.task != id) continue;
      if (event.kind == TaskEventKind::kStarted) report.start_ms = event.time_ms;
      if (!live && seq == task.exit_seq) report.finish_ms = event.time_ms;
    }
    out.push_back(std::move(report));
  }
  return out;
}

Result<FetchLogReply> TaskManager::TailLog(const TaskId& task, uint64_t max_bytes) const {
  auto tail = ReadLogTail(TaskLogPath(options_.log_dir, task), max_bytes);
  if (!tail.ok()) {
    if (tail.status().code() == StatusCode::kNotFound) {
      // Gone after its task ended: most likely the retention's doing.
      auto it = tasks_.find(task);
      const bool ended = it == tasks_.end() || Forgettable(it->second);
      return Status::NotFound("task " + task.ToString() + " has no log on node " + options_.node.name +
                              (ended && log_janitor_ != nullptr
                                   ? " (ended tasks' logs are removed past its --task-log-retention-hours or "
                                     "--task-logs-max)"
                                   : ""));
    }
    return tail.status();
  }
  FetchLogReply reply;
  reply.data = std::move(tail->data);
  reply.size = tail->size;
  reply.truncated = tail->truncated;
  reply.dropped = tail->dropped;
  return reply;
}

}  // namespace gpool::worker
