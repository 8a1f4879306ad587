// ClusterState: the node commands: RegisterNode (with the reconcile of the
// tasks a worker reports against what the state thinks runs there),
// NodeState and UpdateNode (cordon, pool, taints, labels).
#include "control/state/cluster_state.h"
#include "protocol/event.h"
#include "protocol/model/node_update.h"
#include "protocol/model/task_report.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace gpool::state {

ApplyResult ClusterState::ApplyRegisterNode(int64_t now, const RegisterNodeCmd& cmd) {
  ApplyResult result;
  // Validated at the edge (the node registry); see ApplySubmitJob.
  result.status = CheckNodeShape(cmd.node);
  if (!result.status.ok()) return result;
  // A name bound to a worker key is that worker's: another key claiming it
  // changes nothing (its tasks keep running). Checked here too, not only at
  // the edge, so two registrations racing for a new name bind exactly one.
  // A key rotated away with a grace still counts until its deadline.
  if (auto bound = nodes_.find(cmd.node.name);
      bound != nodes_.end() && !cmd.worker_key.empty() && !bound->second.worker_key.empty() &&
      !bound->second.AdmitsKey(cmd.worker_key, now)) {
    result.status = Status::Unauthenticated("node '" + cmd.node.name + "' is bound to another worker key");
    return result;
  }
  if (auto enrolled = enrolled_nodes_.find(cmd.node.name); enrolled != enrolled_nodes_.end()) {
    if (!cmd.worker_key.empty() && enrolled->second != cmd.worker_key) {
      result.status = Status::Unauthenticated("node '" + cmd.node.name + "' is enrolled with another worker key");
      return result;
    }
  }
  std::map<std::string, std::string> token_labels;
  result.status = AdmitRegistration(now, cmd, &token_labels);
  if (!result.status.ok()) return result;
  NodeRecord& node = nodes_[cmd.node.name];
  // A join token's labels are the admin's: they overlay the spec's like `gpool node label`.
  for (auto& [key, value] : token_labels) node.admin_labels[key] = value;
  if (auto enrolled = enrolled_nodes_.find(cmd.node.name); enrolled != enrolled_nodes_.end()) {
    node.worker_key = enrolled->second;  // the admin's enrolment binds it
    enrolled_nodes_.erase(enrolled);
  }
  if (node.worker_key.empty()) node.worker_key = cmd.worker_key;
  // A retired key past its deadline is refused already; its entry goes here.
  if (!node.retired_key.empty() && now >= node.retired_key_until_ms) {
    node.retired_key.clear();
    node.retired_key_until_ms = 0;
  }
  // The spec file's pool applies on first registration and when the file's
  // pool changes; an operator's `gpool node pool` holds until then.
  const bool first = node.spec.name.empty();
  const bool spec_pool_changed = first || cmd.node.pool != node.spec.pool ||
                                 cmd.node.pool_queue != node.spec.pool_queue;
  if (!cmd.node.pool.empty() && spec_pool_changed) {
    node.pool = cmd.node.pool;
    node.pool_queue = cmd.node.pool_queue;
  }
  if (node.registered_ms == 0) node.registered_ms = now;
  // Tasks' GPUs are counted in queue_held_ under their model: a GPU whose
  // model changed or that is gone (rare: a swapped card) recounts them.
  bool models_changed = false;
  for (size_t i = 0; i < node.spec.gpus.size() && !node.tasks.empty(); ++i) {
    const GpuInfo& was = node.spec.gpus[i];
    models_changed |= std::none_of(cmd.node.gpus.begin(), cmd.node.gpus.end(), [&](const GpuInfo& gpu) {
      return gpu.index == was.index && gpu.model == was.model;
    });
  }
  node.spec = cmd.node;
  if (models_changed) RebuildQueueHeld();
  MarkReady(node, cmd.node.name, now);
  node.last_seen_ms = now;
  // A condition raised while the node was between leaders arrives with its
  // registration, not a heartbeat: it is news all the same.
  SetNodeHealth(now, cmd.node.name, node, cmd.health);
  TouchSpec(node);

  std::map<TaskId, const TaskReport*> reported;
  for (const auto& report : cmd.tasks) reported[report.task] = &report;

  // Reconcile: the worker is the authority on which processes exist.
  const std::vector<TaskId> here(node.tasks.begin(), node.tasks.end());
  std::set<uint64_t> restarted;
  for (const TaskId& id : here) {
    JobRecord* job = MutableJob(id.job.value());
    if (job == nullptr || id.index >= job->tasks.size()) continue;
    TaskRecord& task = job->tasks[id.index];
    auto it = reported.find(id);
    if (it == reported.end()) {
      // A bound task the worker has not seen yet is still on its way; the
      // dispatcher resends it. A running one the worker does not know is gone
      // (the node rebooted, or its supervisor died with it): lost, and
      // requeued if its restart policy allows.
      if (task.state == TaskState::kRunning) {
        LoseTask(*job, task, "task was not running when its node re-registered", now, restarted);
        if (restarted.count(job->id.value())) RequeueGangIfBroken(*job, "a task was lost with its node");
        UpdateJobState(*job, now);
      }
      continue;
    }
    const TaskReport& report = *it->second;
    if (report.state == TaskState::kRunning) {
      if (task.state == TaskState::kBound) {
        task.state = TaskState::kRunning;
        task.pid = report.pid;
        // The worker's start time when it still had the event (a leader
        // change before it committed), so usage is charged from the start.
        if (task.start_ms == 0) task.start_ms = report.start_ms != 0 ? report.start_ms : now;
        TrackCommand(task);
        UpdateJobState(*job, now);
      }
      continue;
    }
    const TaskState terminal = report.state;  // decoded: a state this build names
    if (terminal == TaskState::kLost) {
      // The node ended it (lease, supervisor): like a loss of the node.
      task.exit_code = report.exit_code;
      task.signal = report.signal;
      LoseTask(*job, task, "lost on node " + cmd.node.name + " while its worker was away", now, restarted);
      if (restarted.count(job->id.value())) RequeueGangIfBroken(*job, "a task was lost with its node");
      UpdateJobState(*job, now);
      continue;
    }
    if (IsTerminal(terminal)) {
      task.exit_code = report.exit_code;
      task.signal = report.signal;
      // It ended while the coordinator was not listening: at the worker's
      // time if it says, else at an unknown time (usage up to the last checkpoint).
      const int64_t ended = report.finish_ms != 0 ? std::min(report.finish_ms, now) : now;
      usage_end_unknown_ = report.finish_ms == 0;
      if (!RequeueIfEvicted(*job, task, ended)) {
        FinishTask(*job, task, task.stop_requested ? TaskState::kCancelled : terminal, ended);
      }
      usage_end_unknown_ = false;
      UpdateJobState(*job, now);
    }
  }
  return result;
}

void ClusterState::MarkReady(NodeRecord& node, const std::string& name, int64_t now) {
  if (node.state != NodeState::kReady) {
    EmitNodeEvent(now, EventKind::kNodeReady, name, "heard from again", "coordinator", "node " + name + " is ready",
                  "node-down:" + name + ":" + std::to_string(node.down_since_ms));
  }
  node.state = NodeState::kReady;
  node.down_since_ms = 0;
}

ApplyResult ClusterState::ApplyNodeState(int64_t now, const NodeStateCmd& cmd) {
  ApplyResult result;
  auto it = nodes_.find(cmd.node);
  if (it == nodes_.end()) {
    result.status = Status::NotFound("node '" + cmd.node + "' is not registered");
    return result;
  }
  const NodeState state = cmd.state;  // decoded: unknown names never get here
  if (state == NodeState::kReady) {
    MarkReady(it->second, cmd.node, now);
  } else if (it->second.state == NodeState::kReady) {
    it->second.down_since_ms = now;
    EmitNodeEvent(now, EventKind::kNodeNotReady, cmd.node, "silent past the node timeout", "coordinator",
                  "node " + cmd.node + " is not ready", "node-down:" + cmd.node + ":" + std::to_string(now));
  }
  it->second.state = state;
  // LAST SEEN is when the node was last heard from, not when it was found
  // silent: a node dead for 45 s must not show 36 s.
  if (cmd.last_seen_ms > 0) {
    it->second.last_seen_ms = std::max(it->second.last_seen_ms, cmd.last_seen_ms);
  } else if (state == NodeState::kReady) {
    it->second.last_seen_ms = now;
  }
  TouchSpec(it->second);
  return result;
}

ApplyResult ClusterState::ApplyUpdateNode(int64_t now, const UpdateNodeCmd& cmd) {
  ApplyResult result;
  const UpdateNode& update = cmd.update;
  // Validated at the edge (the gateway); the op is one this build names
  // (an unknown one is refused when the command is decoded).
  auto it = nodes_.find(update.node);
  if (it == nodes_.end() && update.op == NodeUpdateOp::kWorkerKey) {
    // Enrolment in advance: the name is reserved for this key until its
    // worker registers (and the handshake admits the key as that node).
    enrolled_nodes_[update.node] = update.key;
    return result;
  }
  if (it == nodes_.end()) {
    result.status = Status::NotFound("node " + update.node + " is not registered");
    return result;
  }
  NodeRecord& node = it->second;
  TouchSpec(node);
  switch (update.op) {
    case NodeUpdateOp::kWorkerKey:
      // An admin's rotation: the name is bound to the new key from here on.
      // The old key is no longer this node at once, or (with a grace) from
      // the command's time plus the grace on: every replica computes the
      // same deadline. A previous rotation's retired key is dropped: one
      // key in retirement at a time.
      if (update.grace_ms > 0 && !node.worker_key.empty() && node.worker_key != update.key) {
        node.retired_key = node.worker_key;
        node.retired_key_until_ms = now + static_cast<int64_t>(update.grace_ms);
      } else if (update.key != node.worker_key || update.grace_ms == 0) {
        node.retired_key.clear();
        node.retired_key_until_ms = 0;
      }
      node.worker_key = update.key;
      break;
    case NodeUpdateOp::kCordon:
    case NodeUpdateOp::kUncordon:
      ApplyCordon(now, update, node);
      break;
    case NodeUpdateOp::kPool:
      node.pool = update.pool;
      node.pool_queue = update.pool == "exclusive" ? update.queue : "";
      break;
    case NodeUpdateOp::kTaint:
      for (const auto& key : update.remove_taints) node.taints.erase(key);
      for (const auto& [key, value] : update.taints) node.taints[key] = value;
      break;
    case NodeUpdateOp::kLabel:
      for (const auto& key : update.remove_labels) node.admin_labels.erase(key);
      for (const auto& [key, value] : update.labels) node.admin_labels[key] = value;
      break;
  }
  return result;
}

void ClusterState::ApplyCordon(int64_t now, const UpdateNode& update, NodeRecord& node) {
  const bool cordon = update.op == NodeUpdateOp::kCordon;
  if (node.cordoned != cordon || (cordon && node.cordon_reason != "operator")) {
    // An operator's cordon takes over a health cordon: the policy must
    // not lift what an operator asked for.
    if (cordon && !node.cordoned) node.cordon_ms = now;
    EmitNodeEvent(now, cordon ? EventKind::kNodeCordoned : EventKind::kNodeUncordoned, update.node, "operator",
                  "operator", "node " + update.node + (cordon ? " cordoned" : " uncordoned") + " by an operator",
                  "cordon:" + update.node + ":" + std::to_string(node.cordon_ms));
  }
  node.cordoned = cordon;
  node.cordon_reason = cordon ? "operator" : "";
  if (!cordon) node.operator_uncordon_ms = now;
  NoteHealthLook(update.node, node);  // an operator's cordon takes over a health cordon
}

}  // namespace gpool::state
