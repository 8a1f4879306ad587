// ClusterState: what nodes lose and how it is healed. Node loss (tasks lost,
// devices freed, jobs requeued by their restart policy), node health
// (conditions reported by workers, the health policy's fences), and the
// committed event stream operators and alert sinks read.
#include <algorithm>
#include <set>

#include "control/state/cluster_state.h"
#include "protocol/event.h"
#include "protocol/health.h"
#include "protocol/model/health_fence.h"
#include "protocol/model/probe.h"

namespace gpool::state {

// --- The event stream ---------------------------------------------------------

std::vector<ClusterEvent> ClusterState::EventsAfter(uint64_t seq, size_t limit) const {
  std::vector<ClusterEvent> out;
  if (events_.empty()) return out;
  const uint64_t first = events_.front().seq;
  const size_t start = seq < first ? 0 : static_cast<size_t>(seq - first + 1);
  for (size_t i = start; i < events_.size() && out.size() < limit; ++i) out.push_back(events_[i]);
  return out;
}

void ClusterState::Emit(int64_t now, EventKind kind, ClusterEvent event) {
  event.seq = next_event_seq_++;
  event.time_ms = now;
  event.kind = std::string(ToString(kind));
  events_.push_back(std::move(event));
  while (events_.size() > kMaxEvents) events_.pop_front();
}

void ClusterState::EmitTask(int64_t now, EventKind kind, const TaskRecord& task, std::string message) {
  ClusterEvent event;
  event.node = task.node;
  event.job = task.id.job.value();
  event.task = task.id.index;
  event.attempt = task.id.attempt;
  event.actor = "coordinator";
  event.message = std::move(message);
  // One occurrence per task attempt and kind: a resent notice carries the same key.
  event.dedupe_key = std::string(ToString(kind)) + ":" + task.id.ToString();
  Emit(now, kind, std::move(event));
}

void ClusterState::EmitNodeEvent(int64_t now, EventKind kind, const std::string& node, std::string reason,
                                 std::string actor, std::string message, std::string dedupe_key,
                                 std::string severity) {
  ClusterEvent event;
  event.node = node;
  event.severity = std::move(severity);
  event.reason = std::move(reason);
  event.actor = std::move(actor);
  event.message = std::move(message);
  event.dedupe_key = std::move(dedupe_key);
  Emit(now, kind, std::move(event));
}

std::string ClusterState::HealthDedupeKey(const std::string& node, const HealthCondition& condition) {
  return "health:" + node + ":" + condition.Key() + ":" + std::to_string(condition.first_seen_ms);
}

// --- Restart policy -----------------------------------------------------------

bool ClusterState::RestartAllowed(const JobRecord& job, RestartPolicy cause) const {
  if (job.cancel_requested || !job.failure().empty()) return false;
  const RestartPolicy policy = RestartPolicyFromString(job.spec.restart.policy).value_or(RestartPolicy::kOnNodeLoss);
  if (policy == RestartPolicy::kNever) return false;
  // on-failure covers node loss too: a lost task is a failure the job did not cause.
  if (cause == RestartPolicy::kOnFailure && policy != RestartPolicy::kOnFailure) return false;
  return job.restarts() < job.spec.restart.max_attempts;
}

void ClusterState::CountRestart(JobRecord& job, const std::string& reason) {
  job.UpdateExtras([&](JobRecord::Extras& e) {
    ++e.restarts;
    e.restart_reason = reason.substr(0, 256);
  });
}

void ClusterState::RequeueForRestart(JobRecord& job, TaskRecord& task, const std::string& reason, int64_t now) {
  EmitTask(now, EventKind::kTaskRequeued, task, reason);
  if (HoldsResources(task.state)) {
    ChargeUsage(job, task, losing_task_ ? "lost" : "failed", now);
    ReleaseResources(task);
  }
  TaskRecord next;
  next.id = TaskId{task.id.job, task.id.index, task.id.attempt + 1};
  next.group = task.group;
  next.UpdateExtras([&](TaskRecord::Extras& e) {
    e.evicted_by = task.evicted_by();
    e.message = ("requeued (restart " + std::to_string(job.restarts()) + " of " +
                 std::to_string(job.spec.restart.max_attempts) + "): " + reason)
                    .substr(0, 256);
  });
  task = std::move(next);
  job.UpdateExtras([&](JobRecord::Extras& e) { e.requeue_ms = now; });
}

void ClusterState::RequeueGangIfBroken(JobRecord& job, const std::string& reason) {
  std::vector<uint32_t> staying(job.spec.tasks.size(), 0);
  for (const auto& task : job.tasks) {
    if (HoldsResources(task.state) && !task.stop_requested) ++staying[task.group];
  }
  bool broken = false;
  for (uint32_t group = 0; group < job.spec.tasks.size(); ++group) {
    // Only groups that lost something can be broken by this; a group that
    // never ran (its tasks all pending) is not "broken".
    bool lost_any = false;
    for (const auto& task : job.tasks) lost_any |= task.group == group && task.state == TaskState::kPending;
    broken |= lost_any && staying[group] < job.spec.tasks[group].MinReplicas();
  }
  if (!broken) return;
  // A gang never runs partly: the rest stop and come back with the lost ones
  // as their next attempt (evicted tasks are requeued when they end).
  for (auto& task : job.tasks) {
    if (!HoldsResources(task.state) || task.stop_requested) continue;
    task.stop_requested = true;
    task.evicted = true;
    task.stop_grace_ms = 0;
    task.set_message(("requeued with its gang: " + reason).substr(0, 256));
    TrackCommand(task);
  }
}

// --- Node loss ----------------------------------------------------------------

void ClusterState::LoseTask(JobRecord& job, TaskRecord& task, const std::string& why, int64_t now,
                            std::set<uint64_t>& restarted) {
  EmitTask(now, EventKind::kTaskLost, task, why);
  // Every way an attempt ends below is charged as lost: up to the last
  // usage checkpoint when its end is unknown.
  losing_task_ = true;
  struct Losing {
    bool& flag;
    ~Losing() { flag = false; }
  } losing{losing_task_};
  if (task.evicted) {  // it was being stopped to be requeued anyway
    RequeueIfEvicted(job, task, now);
    return;
  }
  const uint64_t id = job.id.value();
  const bool restart =
      !task.stop_requested && (restarted.count(id) != 0 || RestartAllowed(job, RestartPolicy::kOnNodeLoss));
  if (restart) {
    if (restarted.insert(id).second) CountRestart(job, why);
    RequeueForRestart(job, task, why, now);
  } else {
    task.set_message(why);
    FinishTask(job, task, TaskState::kLost, now);
  }
}

ApplyResult ClusterState::ApplyNodeLost(int64_t now, const NodeLostCmd& cmd) {
  ApplyResult result;
  auto it = nodes_.find(cmd.node);
  if (it == nodes_.end()) {
    result.status = Status::NotFound("node '" + cmd.node + "' is not registered");
    return result;
  }
  NodeRecord& node = it->second;
  if (node.state == NodeState::kLost) return result;  // a repeat
  if (node.state == NodeState::kReady) {
    // It came back (registered again) before this committed: nothing is lost.
    result.status = Status::FailedPrecondition("node " + cmd.node + " is Ready again");
    return result;
  }
  node.state = NodeState::kLost;
  node.last_seen_ms = std::max(node.last_seen_ms, cmd.last_seen_ms);
  TouchSpec(node);
  const std::string why = "node " + cmd.node + " was lost";
  EmitNodeEvent(now, EventKind::kNodeLost, cmd.node, "silent past the node-loss grace", "coordinator",
                why + "; its tasks are lost", "node-down:" + cmd.node + ":" + std::to_string(node.down_since_ms));

  std::set<uint64_t> restarted;  // jobs that count this loss as one restart
  std::set<uint64_t> touched;
  const std::vector<TaskId> here(node.tasks.begin(), node.tasks.end());
  for (const TaskId& id : here) {
    JobRecord* job = MutableJob(id.job.value());
    if (job == nullptr || id.index >= job->tasks.size() || job->tasks[id.index].id != id) continue;
    TaskRecord& task = job->tasks[id.index];
    if (!HoldsResources(task.state)) continue;
    touched.insert(job->id.value());
    LoseTask(*job, task, why, now, restarted);
  }
  for (uint64_t id : touched) {
    JobRecord* job = MutableJob(id);
    if (restarted.count(id)) RequeueGangIfBroken(*job, why);
    UpdateJobState(*job, now);
  }
  return result;
}

// --- Node health --------------------------------------------------------------

ApplyResult ClusterState::ApplyNodeHealth(int64_t now, const NodeHealthCmd& cmd) {
  ApplyResult result;
  auto it = nodes_.find(cmd.node);
  if (it == nodes_.end()) {
    result.status = Status::NotFound("node '" + cmd.node + "' is not registered");
    return result;
  }
  SetNodeHealth(now, cmd.node, it->second, cmd.health);
  return result;
}

void ClusterState::SetNodeHealth(int64_t now, const std::string& name, NodeRecord& node,
                                 const std::vector<HealthCondition>& health) {
  std::map<std::string, const HealthCondition*> before, after;
  for (const auto& c : node.health) before[c.Key()] = &c;
  for (const auto& c : health) after[c.Key()] = &c;
  for (const auto& [key, c] : after) {
    auto old = before.find(key);
    // New, or worse than it was: tell. A repeat of the same condition is not news.
    const bool worse = old != before.end() && HealthSeverityFromString(c->severity) >
                                                  HealthSeverityFromString(old->second->severity);
    const bool new_xid = old != before.end() && HealthKindFromString(c->kind) == HealthKind::kXid && c->xid != old->second->xid;
    if (old != before.end() && !worse && !new_xid) continue;
    EmitNodeEvent(now, EventKind::kHealthRaised, name, key, "worker", c->message,
                  HealthDedupeKey(name, *c) + (worse || new_xid ? ":" + c->severity + ":" + std::to_string(c->xid) : ""),
                  c->severity);
  }
  for (const auto& [key, c] : before) {
    if (after.count(key)) continue;
    // The raise's key: a receiver pairs them.
    EmitNodeEvent(now, EventKind::kHealthCleared, name, key, "worker", "cleared: " + c->message,
                  HealthDedupeKey(name, *c), c->severity);
  }
  node.health = health;
  NoteHealthLook(name, node);
}

ApplyResult ClusterState::ApplyHealthFence(int64_t now, const HealthFenceCmd& cmd) {
  ApplyResult result;
  using A = HealthFenceAction;
  const A action = cmd.action;
  if (action == A::kBreakerOpen || action == A::kBreakerClose) {
    const bool open = action == A::kBreakerOpen;
    if (breaker_open_ == open) return result;
    breaker_open_ = open;
    if (open) breaker_opened_ms_ = now;
    // The close carries the open's key, so a receiver pairs them.
    EmitNodeEvent(now, open ? EventKind::kHealthBreakerOpen : EventKind::kHealthBreakerClosed, "", cmd.reason,
                  "health-policy", cmd.reason, "breaker:" + std::to_string(breaker_opened_ms_));
    return result;
  }
  if (action == A::kSuppressed) {
    // An alert only: the reason starts with the occurrence's dedupe key.
    const size_t space = cmd.reason.find(' ');
    EmitNodeEvent(now, EventKind::kHealthFenceSuppressed, cmd.node, cmd.reason, "health-policy",
                  space == std::string::npos ? cmd.reason : cmd.reason.substr(space + 1),
                  cmd.reason.substr(0, space));
    return result;
  }
  auto it = nodes_.find(cmd.node);
  if (it == nodes_.end()) {
    result.status = Status::NotFound("node '" + cmd.node + "' is not registered");
    return result;
  }
  NodeRecord& node = it->second;
  if (action == A::kGpuUnhealthy || action == A::kGpuHealthy) {
    auto& list = node.unhealthy_gpus;
    auto at = std::lower_bound(list.begin(), list.end(), cmd.gpu);
    const bool listed = at != list.end() && *at == cmd.gpu;
    if (action == A::kGpuUnhealthy && !listed) list.insert(at, cmd.gpu);
    if (action == A::kGpuHealthy && listed) list.erase(at);
    TouchSpec(node);
    NoteHealthLook(cmd.node, node);
    return result;
  }
  if (action == A::kCordon || action == A::kDrain) {
    if (!node.cordoned) {
      node.cordoned = true;
      node.cordon_reason = "health";
      node.cordon_ms = now;
      TouchSpec(node);
      EmitNodeEvent(now, EventKind::kNodeCordoned, cmd.node, cmd.reason, "health-policy",
                    "cordoned by the health policy: " + cmd.reason,
                    "cordon:" + cmd.node + ":" + std::to_string(node.cordon_ms));
    }
    if (action == A::kDrain) {
      const std::vector<TaskId> here(node.tasks.begin(), node.tasks.end());
      for (const TaskId& id : here) {
        JobRecord* job = MutableJob(id.job.value());
        if (job == nullptr || id.index >= job->tasks.size() || job->tasks[id.index].id != id) continue;
        TaskRecord& task = job->tasks[id.index];
        if (!HoldsResources(task.state) || task.stop_requested) continue;
        task.stop_requested = true;
        task.evicted = true;  // requeued when it ends, not failed: the node is at fault
        task.stop_grace_ms = cmd.grace_ms;
        task.set_message(("drained by the health policy: " + cmd.reason).substr(0, 256));
        TrackCommand(task);
        EmitTask(now, EventKind::kTaskPreempted, task, task.message());
      }
    }
    NoteHealthLook(cmd.node, node);
    return result;
  }
  if (action == A::kUncordon) {
    // The policy lifts only its own cordon; an operator's stays.
    if (!node.cordoned || node.cordon_reason != "health") return result;
    node.cordoned = false;
    node.cordon_reason.clear();
    TouchSpec(node);
    EmitNodeEvent(now, EventKind::kNodeUncordoned, cmd.node, cmd.reason, "health-policy",
                  "uncordoned by the health policy: " + cmd.reason,
                  "cordon:" + cmd.node + ":" + std::to_string(node.cordon_ms));
    NoteHealthLook(cmd.node, node);
    return result;
  }
  // Decode refuses names this build does not know; only a value cast from
  // an integer could get here.
  result.status = Status::InvalidArgument("unknown health action " + std::to_string(static_cast<int>(action)));
  return result;
}

ApplyResult ClusterState::ApplyProbeResult(int64_t now, const ProbeResultCmd& cmd) {
  ApplyResult result;
  const std::string device = "probe/" + std::string(NameOf(cmd.kind));
  for (const ProbeResult& probe : cmd.results) {
    auto it = nodes_.find(probe.node);
    if (it == nodes_.end()) continue;  // a node that left since the probe ran
    auto& list = it->second.probe_health;
    auto at = std::find_if(list.begin(), list.end(), [&](const HealthCondition& c) { return c.device == device; });
    if (probe.slow && at != list.end()) {
      at->last_seen_ms = now;
      ++at->count;
      at->message = probe.message;
    } else if (probe.slow) {
      HealthCondition slow{.kind = std::string(ToString(HealthKind::kSlow)), .device = device,
                           .severity = std::string(ToString(HealthSeverity::kDegraded)), .first_seen_ms = now,
                           .last_seen_ms = now, .count = 1, .message = probe.message};
      EmitNodeEvent(now, EventKind::kHealthRaised, probe.node, slow.Key(), "probe", probe.message,
                    HealthDedupeKey(probe.node, slow), slow.severity);
      list.push_back(std::move(slow));
    } else if (at != list.end()) {
      EmitNodeEvent(now, EventKind::kHealthCleared, probe.node, at->Key(), "probe", "cleared: " + probe.message,
                    HealthDedupeKey(probe.node, *at), at->severity);
      list.erase(at);
    }
    NoteHealthLook(probe.node, it->second);
  }
  return result;
}

ApplyResult ClusterState::ApplySinkCursor(const SinkCursorCmd& cmd) {
  uint64_t& cursor = sink_cursors_[cmd.sink];
  cursor = std::max(cursor, cmd.seq);
  return ApplyResult{};
}

}  // namespace gpool::state
