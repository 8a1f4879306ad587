// ClusterState: the job commands (SubmitJob, CancelJob, TaskEvent) and the
// task and job lifecycle they share with the node and plan commands: finishing
// and requeueing tasks, releasing what they hold, and deriving a job's state.
#include "control/state/cluster_state.h"

#include <algorithm>
#include <set>

#include "control/state/cluster_state_internal.h"
#include "protocol/event.h"
#include "protocol/model/task_report.h"

namespace gpool::state {

using internal::HasScaleRule;
using internal::KeyHash;

ApplyResult ClusterState::ApplySubmitJob(uint64_t index, int64_t now, const SubmitJobCmd& cmd) {
  ApplyResult result;
  if (!cmd.idempotency_key.empty()) {
    if (const uint64_t first = FindIdempotent(cmd.idempotency_key); first != 0) {
      result.job_id = first;
      result.duplicate = true;
      return result;
    }
  }
  // The spec was validated at the edge (the gateway, under its configured
  // limits); apply checks only what the state needs of it, so a log written
  // under other rules replays the same.
  result.status = CheckJobShape(cmd.spec);
  if (!result.status.ok()) return result;
  result.status = CheckSubmitQueue(cmd.spec.queue);
  if (!result.status.ok()) return result;

  JobRecord job;
  job.id = JobId(next_job_id_++);
  job.spec = cmd.spec;
  job.arrival = index;
  job.submit_ms = now;
  job.idempotency_key = cmd.idempotency_key;
  job.exec_token = cmd.exec_token;
  job.exec_key = cmd.exec_key;
  uint32_t task_index = 0;
  for (uint32_t group = 0; group < cmd.spec.tasks.size(); ++group) {
    for (uint32_t replica = 0; replica < cmd.spec.tasks[group].replicas; ++replica) {
      TaskRecord task;
      task.id = TaskId{job.id, task_index++, 0};
      task.group = group;
      job.tasks.push_back(std::move(task));
    }
  }
  if (job.spec.session.enabled) job.UpdateSession([&](SessionRuntime& r) { r.renew_ms = now; });
  result.job_id = job.id.value();
  if (!job.idempotency_key.empty()) idempotency_.emplace(KeyHash(job.idempotency_key), result.job_id);
  pending_.insert(result.job_id);
  CountJobState(job, JobState::kPending, +1);
  if (job.spec.session.enabled) session_jobs_.insert(result.job_id);
  if (HasScaleRule(job.spec)) scale_jobs_.insert(result.job_id);
  jobs_.emplace(result.job_id, std::move(job));
  return result;
}

ApplyResult ClusterState::ApplyCancelJob(int64_t now, const CancelJobCmd& cmd) {
  ApplyResult result;
  result.job_id = cmd.job_id;
  JobRecord* job = MutableJob(cmd.job_id);
  if (job == nullptr) {
    result.status = Status::NotFound("job " + std::to_string(cmd.job_id) + " does not exist");
    return result;
  }
  // A retried cancel (its first reply lost) must not look like a failure.
  if (job->state == JobState::kCancelled || (job->cancel_requested && !IsTerminal(job->state))) {
    result.job_state = std::string(ToString(job->state));
    return result;
  }
  if (IsTerminal(job->state)) {
    result.status = Status::FailedPrecondition("job " + std::to_string(cmd.job_id) + " has already finished (" +
                                               std::string(ToString(job->state)) + ")");
    result.job_state = std::string(ToString(job->state));
    return result;
  }
  job->cancel_requested = true;
  if (job->session() != nullptr && !cmd.reason.empty()) {
    job->UpdateSession([&](SessionRuntime& r) { r.close_reason = cmd.reason; });
  }
  for (auto& task : job->tasks) {
    const NodeRecord* node = HoldsResources(task.state) ? FindNode(task.node) : nullptr;
    if (task.state == TaskState::kPending) {
      task.set_message("cancelled before it was placed");
      FinishTask(*job, task, TaskState::kCancelled, now);
    } else if (node != nullptr && node->state != NodeState::kReady) {
      // Its node is unreachable: no one can stop the task or hear that it
      // did, so the cancel completes now. The node's lease stops the process
      // if the node never returns; a node that returns is told to stop it
      // (a task it reports that is not placed there).
      task.set_message("cancelled while node " + task.node + " was unreachable; marked lost");
      EmitTask(now, EventKind::kTaskLost, task, task.message());
      FinishTask(*job, task, TaskState::kLost, now);
    } else if (HoldsResources(task.state)) {
      task.stop_requested = true;
      task.stop_grace_ms = cmd.grace_ms;
      task.set_message("cancel requested");
      TrackCommand(task);
    }
  }
  UpdateJobState(*job, now);
  result.job_state = std::string(ToString(job->state));
  return result;
}

ApplyResult ClusterState::ApplyTaskEvent(int64_t now, const TaskEventCmd& cmd) {
  ApplyResult result;
  const TaskEvent& event = cmd.event;
  JobRecord* job = MutableJob(event.task.job.value());
  if (job == nullptr || event.task.index >= job->tasks.size()) {
    result.status = Status::NotFound("task " + event.task.ToString() + " does not exist");
    return result;
  }
  TaskRecord& task = job->tasks[event.task.index];
  if (task.id != event.task || task.node != event.node) {
    result.status = Status::FailedPrecondition("event for task " + event.task.ToString() + " from node " + event.node +
                                               " does not match its current placement");
    return result;
  }
  // Events are redelivered until acked; a repeat must change nothing.
  if (!HoldsResources(task.state)) return result;
  const int64_t when = event.time_ms != 0 ? event.time_ms : now;
  const TaskEventKind kind = event.kind;  // decoded: unknown kinds never get here
  if (kind == TaskEventKind::kStarted) {
    if (task.state == TaskState::kBound) {
      task.state = TaskState::kRunning;
      task.pid = event.pid;
      task.start_ms = when;
      TrackCommand(task);
    } else if (event.time_ms != 0 && event.time_ms < task.start_ms) {
      // A re-registration found it running before this event committed
      // (a leader change) and dated its start then; the worker's own time
      // is the real one, which is what its usage is charged from.
      task.start_ms = event.time_ms;
      if (job->start_ms > task.start_ms) job->start_ms = task.start_ms;
    }
    NoteSessionStarted(*job, event);
  } else if (kind == TaskEventKind::kLost) {
    task.exit_code = event.exit_code;
    task.signal = event.signal;
    if (task.start_ms == 0) task.start_ms = when;
    std::set<uint64_t> restarted;
    usage_end_known_ = event.time_ms != 0;  // the worker saw it end
    LoseTask(*job, task, event.message.empty() ? "lost on node " + event.node : event.message, when, restarted);
    usage_end_known_ = false;
    if (!restarted.empty()) RequeueGangIfBroken(*job, "a task was lost on node " + event.node);
  } else {
    task.exit_code = event.exit_code;
    task.signal = event.signal;
    if (!event.message.empty()) task.set_message(event.message);
    const bool clean = kind == TaskEventKind::kExited && event.exit_code == 0 && event.signal == 0;
    // A task stopped at its max_runtime would reach it again: it is not
    // restarted, whatever the restart policy.
    const bool timed_out = !clean && StoppedForTimeLimit(event.message);
    if (timed_out) task.set_message("time limit: stopped after its max_runtime of " + std::to_string(job->spec.max_runtime_ms / 1000) + " s");
    // Over its GPU share: the worker's message says by how much, and a
    // restart would overrun again.
    const bool over_share = !clean && StoppedOverShare(event.message);
    if (over_share) EmitTask(now, EventKind::kTaskOverShare, task, event.message);
    EndTask(*job, task, clean ? TaskState::kSucceeded : TaskState::kFailed, when, timed_out || over_share);
  }
  UpdateJobState(*job, now);
  return result;
}

void ClusterState::EndTask(JobRecord& job, TaskRecord& task, TaskState ended, int64_t when, bool timed_out) {
  if (task.stop_requested) ended = TaskState::kCancelled;
  if (task.start_ms == 0) task.start_ms = when;
  if (RequeueIfEvicted(job, task, when)) return;
  if (ended == TaskState::kFailed && !timed_out && RestartAllowed(job, RestartPolicy::kOnFailure)) {
    const std::string why = "task " + std::to_string(task.id.index) + " failed" +
                            (task.signal != 0 ? " (killed by signal " + std::to_string(task.signal) + ")"
                                              : " (exit code " + std::to_string(task.exit_code) + ")");
    CountRestart(job, why);
    RequeueForRestart(job, task, why, when);
    RequeueGangIfBroken(job, why);
    return;
  }
  FinishTask(job, task, ended, when);
}

ApplyResult ClusterState::ApplyRefuseBind(int64_t now, const RefuseBindCmd& cmd) {
  ApplyResult result;
  JobRecord* job = MutableJob(cmd.task.job.value());
  TaskRecord* task = job != nullptr && cmd.task.index < job->tasks.size() ? &job->tasks[cmd.task.index] : nullptr;
  if (task == nullptr || task->id != cmd.task || task->node != cmd.node) {
    result.status = Status::FailedPrecondition("task " + cmd.task.ToString() + " is no longer placed on node " +
                                               cmd.node);
    return result;
  }
  // Redelivered refusals, or one for a task that ended meanwhile, change nothing.
  if (!HoldsResources(task->state)) return result;
  task->exit_code = 127;  // as a shell reports a command it could not run
  task->set_message("worker refused the task: " + cmd.message);
  EndTask(*job, *task, TaskState::kFailed, now);
  UpdateJobState(*job, now);
  return result;
}

bool ClusterState::RequeueIfEvicted(JobRecord& job, TaskRecord& task, int64_t now) {
  // A session is not requeued: its client held pointers into the GPU
  // memory it had, so a preempted session ends (Preempted).
  if (!task.evicted || job.cancel_requested || !job.failure().empty() || job.spec.session.enabled) return false;
  if (HoldsResources(task.state)) {
    ChargeUsage(job, task, "preempted", now);
    ReleaseResources(task);
  }
  if (JobRecord* claimant = MutableJob(task.evicted_for())) {
    claimant->UpdateExtras([&](JobRecord::Extras& e) { e.claim_ms = now; });
  }
  TaskRecord next;
  next.id = TaskId{task.id.job, task.id.index, task.id.attempt + 1};
  next.group = task.group;
  next.UpdateExtras([&](TaskRecord::Extras& e) {
    e.evicted_by = task.evicted_by();
    e.message = "requeued: " + task.message();
  });
  task = std::move(next);
  job.UpdateExtras([&](JobRecord::Extras& e) { e.requeue_ms = now; });
  return true;
}

void ClusterState::ReleaseResources(TaskRecord& task) {
  auto it = nodes_.find(task.node);
  if (it != nodes_.end()) {
    NodeRecord& node = it->second;
    ReleaseDevices(node, task);
    node.cpu_milli_used -= std::min(node.cpu_milli_used, task.cpu_milli);
    node.memory_mib_used -= std::min(node.memory_mib_used, task.memory_mib);
    if (node.tasks.erase(task.id) != 0) {
      --active_count_;
      if (const JobRecord* job = FindJob(task.id.job); job != nullptr) CountQueueHeld(*job, node, task, -1);
    }
    Touch(node);
  }
  UntrackCommand(task);
}

void ClusterState::FinishTask(JobRecord& job, TaskRecord& task, TaskState state, int64_t now) {
  if (HoldsResources(task.state)) {
    ChargeUsage(job, task, UsageOutcome(state), now);
    ReleaseResources(task);
  }
  task.state = state;
  task.finish_ms = now;
  // A task lost while its job was being cancelled ends the cancel, not the job.
  const bool failing = state == TaskState::kFailed || (state == TaskState::kLost && !job.cancel_requested);
  if (failing && job.failure().empty()) {
    std::string failure = "task " + std::to_string(task.id.index) + (state == TaskState::kLost ? " was lost" : " failed");
    if (state == TaskState::kFailed) {
      failure += task.signal != 0 ? " (killed by signal " + std::to_string(task.signal) + ")"
                                  : " (exit code " + std::to_string(task.exit_code) + ")";
    }
    if (!task.message().empty()) failure += ": " + task.message();
    job.UpdateExtras([&](JobRecord::Extras& e) { e.failure = std::move(failure); });
  }
}

void ClusterState::UpdateJobState(JobRecord& job, int64_t now) {
  // One failed task fails a gang job: stop the rest.
  if (!job.failure().empty()) {
    for (auto& task : job.tasks) {
      if (task.state == TaskState::kPending) {
        task.set_message("job failed before this task was placed");
        FinishTask(job, task, TaskState::kCancelled, now);
      } else if (HoldsResources(task.state) && !task.stop_requested) {
        task.stop_requested = true;
        task.set_message("stopping: another task of the job failed");
        TrackCommand(task);
      }
    }
  }
  FinishUnneededReplicas(job, now);
  bool all_terminal = true, any_active = false, any_started = false, any_pending = false;
  bool any_cancelled_by_user = false;
  for (const auto& task : job.tasks) {
    any_pending |= task.state == TaskState::kPending;
    all_terminal &= IsTerminal(task.state);
    any_active |= HoldsResources(task.state);
    any_cancelled_by_user |= task.state == TaskState::kCancelled && task.message().rfind("not needed", 0) != 0;
    any_started |= task.start_ms != 0;
  }
  JobState next = JobState::kPending;
  if (all_terminal) {
    next = !job.failure().empty() ? JobState::kFailed
           : (any_cancelled_by_user || job.cancel_requested) ? JobState::kCancelled
                                                             : JobState::kSucceeded;
  } else if (any_active) {
    next = JobState::kRunning;
  }
  if (any_started && job.start_ms == 0) {
    int64_t first = 0;
    for (const auto& task : job.tasks) {
      if (task.start_ms != 0 && (first == 0 || task.start_ms < first)) first = task.start_ms;
    }
    job.start_ms = first;
  }
  if (IsTerminal(next) && job.finish_ms == 0) job.finish_ms = now;
  if (IsTerminal(next)) finish_floor_ms_ = std::min(finish_floor_ms_, job.finish_ms);
  if (next != JobState::kPending && job.waiting_reasons()) {
    job.UpdateExtras([](JobRecord::Extras& e) {
      e.pending.clear();
      e.legacy_reasons.clear();
    });
  }
  SetJobState(job, next);
  // Schedulable: has tasks to place. A running elastic job (or one that lost
  // replicas to eviction) stays schedulable while it runs.
  if (!IsTerminal(next) && !job.cancel_requested && any_pending) {
    pending_.insert(job.id.value());
  } else {
    pending_.erase(job.id.value());
  }
}

void ClusterState::FinishUnneededReplicas(JobRecord& job, int64_t now) {
  // An elastic job whose replicas all finished well is done: replicas beyond
  // the minimum that never got capacity are not needed any more.
  std::vector<uint32_t> succeeded(job.spec.tasks.size(), 0);
  bool any_pending = false;
  for (const auto& task : job.tasks) {
    if (HoldsResources(task.state) || !job.failure().empty() || job.cancel_requested) return;
    if (task.state == TaskState::kSucceeded) ++succeeded[task.group];
    any_pending |= task.state == TaskState::kPending;
  }
  if (!any_pending) return;
  for (uint32_t group = 0; group < job.spec.tasks.size(); ++group) {
    if (succeeded[group] < job.spec.tasks[group].MinReplicas()) return;
  }
  for (auto& task : job.tasks) {
    if (task.state != TaskState::kPending) continue;
    task.set_message("not needed: the job's other replicas finished");
    FinishTask(job, task, TaskState::kCancelled, now);
  }
}

}  // namespace gpool::state
