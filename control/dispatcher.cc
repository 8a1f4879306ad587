#include "control/dispatcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <utility>

#include "control/frames.h"
#include "control/training_env.h"
#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"
#include "protocol/security/task_exec_key.h"

namespace gpool::control {

Dispatcher::Dispatcher(const DispatcherOptions& options, const state::ClusterState& state,
                       const WorkerTable& workers, RequestIds& request_ids, Outbox& outbox, Proposer& proposer)
    : options_(options), state_(state), workers_(workers), request_ids_(request_ids), outbox_(outbox),
      proposer_(proposer) {}

const TrainingLayout& Dispatcher::LayoutFor(const state::JobRecord& job, const state::TaskRecord& task) {
  auto it = layouts_.find(job.id.value());
  if (it == layouts_.end() || !it->second.Covers(task)) {
    it = layouts_.insert_or_assign(job.id.value(), TrainingLayout(state_, job, task)).first;
  }
  return it->second;
}

int64_t Dispatcher::Now() const { return options_.clock != nullptr ? options_.clock->MonoMs() : last_now_ms_; }

void Dispatcher::Tick(int64_t now_ms) {
  last_now_ms_ = now_ms;
  // Layouts are valid while the state does not change: within this call.
  struct ClearLayouts {
    std::unordered_map<uint64_t, TrainingLayout>& layouts;
    ~ClearLayouts() { layouts.clear(); }
  } clear_layouts{layouts_};
  // Commands that became due since the last tick (new binds, new stops).
  state_.ForEachCommandDueAfter(seen_seq_, [&](const state::TaskRecord& task, const state::ClusterState::CommandDue&) {
    Consider(task.id, now_ms);
  });
  seen_seq_ = state_.command_seq();
  // Nodes that (re)connected get everything due for them again.
  for (const TaskId& id : std::exchange(recheck_, {})) Consider(id, now_ms);
  // Timers: resends, and records of tasks that settled meanwhile.
  while (!timers_.empty() && timers_.front().at_ms <= now_ms) {
    std::pop_heap(timers_.begin(), timers_.end(), std::greater<Timer>{});
    const Timer timer = timers_.back();
    timers_.pop_back();
    auto record = commands_.find(timer.task);
    if (record == commands_.end() || record->second.request_id != timer.request_id ||
        record->second.recheck_ms != timer.at_ms) {
      continue;  // stale: the command was resent, acknowledged or dropped since
    }
    Consider(timer.task, now_ms);
  }
  if (now_ms >= next_sweep_ms_) {
    next_sweep_ms_ = now_ms + options_.sweep_ms;
    Sweep();
  }
  Pump(now_ms);
  Compact();
}

void Dispatcher::Consider(const TaskId& id, int64_t now_ms) {
  auto record = commands_.find(id);
  const auto due = state_.command_due(id);
  if (!due) {
    if (record != commands_.end()) Drop(record);
    return;
  }
  const Kind kind = due->stop ? Kind::kPreempt : Kind::kBind;
  if (record != commands_.end() && record->second.kind == kind &&
      (record->second.waiting || now_ms < record->second.recheck_ms)) {
    return;  // queued for its node's window, or its timer has not run out
  }
  const state::TaskRecord* task = state_.FindTask(id);
  const std::string* peer = task == nullptr ? nullptr : workers_.PeerFor(task->node);
  if (peer == nullptr) {
    // Not connected: sent when its node registers (NodeConnected).
    if (record != commands_.end()) Drop(record);
    return;
  }
  const Window& window = WindowOf(task->node);
  const bool holds_slot = record != commands_.end() && record->second.in_window &&
                          record->second.window_id == window.id;
  if (!holds_slot && window.unanswered >= std::max<uint32_t>(1, options_.window_per_node)) {
    Enqueue(id, task->node, kind);
    return;
  }
  Send(*task, kind, *peer, now_ms);
}

Dispatcher::Window& Dispatcher::WindowOf(const std::string& node) {
  auto [it, inserted] = windows_.try_emplace(node);
  if (inserted) it->second.id = next_window_id_++;
  return it->second;
}

void Dispatcher::Release(Sent& sent) {
  auto window = windows_.find(sent.node);
  const bool current = window != windows_.end() && window->second.id == sent.window_id;
  if (sent.in_window) {
    sent.in_window = false;
    if (current && window->second.unanswered > 0) {
      --window->second.unanswered;
      freed_.push_back(sent.node);  // its next queued command may go, or the window be let go
    }
  }
  if (sent.waiting) {
    sent.waiting = false;
    --waiting_;
    if (current && window->second.queued > 0) --window->second.queued;
  }
}

void Dispatcher::Enqueue(const TaskId& id, const std::string& node, Kind kind) {
  Window& window = WindowOf(node);
  Sent& sent = commands_[id];
  if (sent.in_window || (sent.waiting && sent.window_id != window.id)) Release(sent);
  if (sent.kind != kind) {
    sent.resends = 0;
    sent.reconfirms = 0;
  }
  const bool was_waiting = sent.waiting;
  sent.kind = kind;
  sent.request_id = 0;  // a late reply to its last send matches nothing now
  sent.acked = false;
  sent.recheck_ms = 0;
  sent.node = node;
  sent.window_id = window.id;
  if (!was_waiting) {
    sent.waiting = true;
    ++window.queued;
    ++waiting_;
  }
  // Stops first: they free what waiting binds and pending jobs need. A stop
  // that replaces a waiting bind leaves a stale entry behind, skipped later.
  if (kind == Kind::kPreempt) {
    window.queue.push_front(id);
  } else if (!was_waiting) {
    window.queue.push_back(id);
  }
}

void Dispatcher::Pump(int64_t now_ms) {
  const uint32_t limit = std::max<uint32_t>(1, options_.window_per_node);
  std::vector<std::string> nodes = std::exchange(freed_, {});
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  for (const std::string& node : nodes) {
    for (;;) {
      auto window = windows_.find(node);
      if (window == windows_.end() || window->second.unanswered >= limit || window->second.queue.empty()) break;
      const TaskId id = window->second.queue.front();
      window->second.queue.pop_front();
      auto record = commands_.find(id);
      if (record == commands_.end() || !record->second.waiting || record->second.window_id != window->second.id) {
        continue;  // stale: sent, replaced or dropped since it was queued
      }
      // Its turn: considered afresh (it may have settled, or its node gone).
      Release(record->second);
      record->second.recheck_ms = 0;
      Consider(id, now_ms);
    }
    auto window = windows_.find(node);
    if (window != windows_.end() && window->second.unanswered == 0 && window->second.queued == 0) {
      windows_.erase(window);  // nothing of it left to count: its memory goes
    }
  }
  if (options_.metrics != nullptr) options_.metrics->commands_waiting = waiting_;
}

void Dispatcher::TaskSettled(const TaskId& task) {
  auto record = commands_.find(task);
  if (record != commands_.end() && !state_.command_due(task)) Drop(record);
}

void Dispatcher::Arm(const TaskId& id, Sent& sent, int64_t at_ms) {
  sent.recheck_ms = at_ms;
  timers_.push_back(Timer{at_ms, sent.request_id, id});
  std::push_heap(timers_.begin(), timers_.end(), std::greater<Timer>{});
}

void Dispatcher::Drop(std::map<TaskId, Sent>::iterator it) {
  Release(it->second);
  commands_.erase(it);  // its timer and request entries go stale
  if (commands_.empty()) {
    timers_ = {};
    by_request_ = {};
  }
}

void Dispatcher::Sweep() {
  for (auto it = commands_.begin(); it != commands_.end();) {
    auto next = std::next(it);
    if (!state_.command_due(it->first)) Drop(it);
    it = next;
  }
}

void Dispatcher::Compact() {
  for (auto& [node, window] : windows_) {
    if (window.queue.size() <= 2 * static_cast<size_t>(window.queued) + 64) continue;
    std::erase_if(window.queue, [&, &window = window](const TaskId& id) {
      auto record = commands_.find(id);
      return record == commands_.end() || !record->second.waiting || record->second.window_id != window.id;
    });
  }
  const size_t live = commands_.size();
  if (timers_.size() > 2 * live + 1024) {
    std::vector<Timer> timers;
    timers.reserve(live);
    for (const auto& [task, sent] : commands_) timers.push_back(Timer{sent.recheck_ms, sent.request_id, task});
    std::make_heap(timers.begin(), timers.end(), std::greater<Timer>{});
    timers_ = std::move(timers);
  }
  if (by_request_.size() > 2 * live + 1024) {
    std::erase_if(by_request_, [&](const std::pair<uint64_t, TaskId>& entry) {
      auto record = commands_.find(entry.second);
      return record == commands_.end() || record->second.request_id != entry.first;
    });
  }
}

std::map<TaskId, Dispatcher::Sent>::iterator Dispatcher::FindRequest(uint64_t request_id) {
  auto it = std::lower_bound(by_request_.begin(), by_request_.end(), request_id,
                             [](const std::pair<uint64_t, TaskId>& entry, uint64_t id) { return entry.first < id; });
  if (it == by_request_.end() || it->first != request_id) return commands_.end();
  auto record = commands_.find(it->second);
  return record != commands_.end() && record->second.request_id == request_id ? record : commands_.end();
}

void Dispatcher::Send(const state::TaskRecord& task, Kind kind, const std::string& peer, int64_t now_ms) {
  const state::JobRecord* job = state_.FindJob(task.id.job);
  if (job == nullptr) return;
  const uint64_t request_id = request_ids_.Next();
  std::string frame;
  if (kind == Kind::kBind) {
    const TaskGroupSpec& group = job->spec.tasks[task.group];
    BindTask bind;
    bind.task = task.id;
    bind.job_name = job->spec.name;
    bind.num_tasks = static_cast<uint32_t>(job->tasks.size());
    bind.command = group.command;
    const TrainingLayout& layout = LayoutFor(*job, task);
    bind.env = layout.EnvFor(task);
    bind.hosts = layout.HostsFor(task);
    bind.task_hosts = layout.TaskHostsFor(task);
    auto [endpoints, keys] = options_.coordinator_contacts
                                 ? options_.coordinator_contacts()
                                 : std::pair{options_.client_endpoints, options_.coordinator_public_key};
    if (!endpoints.empty()) bind.env["GPOOL_COORDINATOR"] = std::move(endpoints);
    if (!keys.empty()) bind.env["GPOOL_COORDINATOR_PUBLIC_KEY"] = std::move(keys);
    for (const auto& [key, value] : group.env) bind.env[key] = value;  // the user's own win
    // This task attempt's own exec credential, derived from the job's secret
    // (security/task_exec_key.h), never the job's secret itself (issue 48):
    // `gpool exec` (and mpirun through `gpool exec-rsh`) into this job's
    // tasks while this attempt is bound or running; with CurveZMQ also the
    // secret key a task's `gpool` connects with. A job recorded without a
    // secret gives its tasks none.
    if (auto token = security::TaskExecSecret(job->exec_token, task.id); token.ok()) {
      bind.env["GPOOL_EXEC_TOKEN"] = std::move(*token);
    }
    bind.gpu_indices = task.gpu_indices;
    bind.gpu_uuids = state_.GpuUuids(task, /*mig_instances=*/false);
    bind.cpu_milli = task.cpu_milli;
    bind.memory_mib = task.memory_mib;
    const DeviceGrant& grant = task.grant();
    if (grant.shared) {
      bind.gpu_memory_mib = grant.gpu_memory_mib;
      bind.gpu_compute_pct = grant.gpu_compute_pct;
      bind.sharing_qos = grant.sharing_qos;
    }
    if (!grant.mig_profile.empty()) {
      bind.mig_profiles.assign(task.gpu_indices.size(), grant.mig_profile);
      bind.mig_starts.assign(task.gpu_indices.size(), grant.mig_start);
    }
    bind.cores = grant.cores;
    bind.numa_policy = job->spec.numa_policy;
    bind.numa_node = task.numa_node;
    bind.exclusive_cpus = task.cpu_ids();
    bind.max_runtime_ms = job->spec.max_runtime_ms;
    bind.time_limit_grace_ms = job->spec.grace_period_ms != 0 ? job->spec.grace_period_ms : options_.preempt_grace_ms;
    // Who the task runs as (issue 31); left unset, the worker's --task-user.
    if (auto run_as = state_.RunAsFor(*job)) bind.run_as = *run_as;
    // An rGPU session: the worker runs its session server, not `command`.
    if (job->spec.session.enabled) {
      bind.rgpu.owner_key = job->spec.session.owner_key;
      bind.rgpu.idle_timeout_ms = job->spec.session.idle_timeout_ms;
    }
    frame = MakeFrame(request_id, proposer_.epoch(), bind);
  } else {
    PreemptTask preempt;
    preempt.task = task.id;
    // The stop's own grace (a cancel's), else the job's, else the coordinator's.
    preempt.grace_ms = task.stop_grace_ms != 0           ? task.stop_grace_ms
                       : job->spec.grace_period_ms != 0 ? job->spec.grace_period_ms
                                                        : options_.preempt_grace_ms;
    preempt.reason = task.message();
    frame = MakeFrame(request_id, proposer_.epoch(), preempt);
  }
  Window& window = WindowOf(task.node);
  Sent& sent = commands_[task.id];
  if (sent.kind != kind) {
    sent.resends = 0;
    sent.reconfirms = 0;
  } else if (sent.request_id != 0) {
    // The same command again: confirming an acknowledged one, or resending an unanswered one.
    uint8_t& count = sent.acked ? sent.reconfirms : sent.resends;
    if (count < UINT8_MAX) ++count;
    if (options_.metrics != nullptr) ++options_.metrics->commands_resent;
  }
  if (sent.waiting || (sent.in_window && sent.window_id != window.id)) Release(sent);
  if (!sent.in_window) {
    sent.in_window = true;
    sent.window_id = window.id;
    sent.node = task.node;
    ++window.unanswered;
  }
  sent.request_id = request_id;
  sent.sent_ms = now_ms;
  sent.kind = kind;
  sent.acked = false;
  // At least a millisecond: Tick's timer loop relies on a resend moving the timer forward.
  // Doubling to 8x: a worker too busy to answer is not sent more to do.
  const int64_t wait_ms = std::max<int64_t>(1, options_.ack_timeout_ms) << std::min<int>(sent.resends, 3);
  Arm(task.id, sent, now_ms + wait_ms);
  by_request_.emplace_back(request_id, task.id);
  spdlog::debug("dispatch command={} task={} node={} request={}", kind == Kind::kBind ? "bind" : "preempt",
                task.id.ToString(), task.node, request_id);
  outbox_.ToWorker(peer, std::move(frame));
}

void Dispatcher::WorkerReplied(const std::string& node, const Envelope& envelope) {
  if (envelope.type() != MessageType::kAck && envelope.type() != MessageType::kErrorReply) return;
  const uint64_t request_id = envelope.header().request_id;
  auto cmd = FindRequest(request_id);
  if (cmd == commands_.end()) return;  // a reply to a command we have since replaced or dropped
  const TaskId task_id = cmd->first;
  const state::TaskRecord* task = state_.FindTask(task_id);
  if (task == nullptr || task->node != node) return;  // only the node it was sent to answers for it
  if (envelope.type() == MessageType::kAck) {
    if (!cmd->second.acked && options_.metrics != nullptr && options_.clock != nullptr) {
      options_.metrics->command_ack_seconds.Observe(
          static_cast<double>(options_.clock->MonoMs() - cmd->second.sent_ms) / 1000.0);
    }
    if (!state_.command_due(task_id)) {
      Drop(cmd);  // it took effect already
      return Pump(Now());
    }
    Sent& sent = cmd->second;
    sent.acked = true;
    sent.resends = 0;
    Release(sent);  // answered: its slot goes to the next command queued for the node
    const int64_t reconfirm_ms =
        std::max(options_.reconfirm_ms,
                 std::min(options_.reconfirm_max_ms, options_.reconfirm_ms << std::min<int>(sent.reconfirms, 16)));
    Arm(task_id, sent, sent.sent_ms + reconfirm_ms);
    return Pump(Now());
  }
  // Answered, if refused: the slot goes back; its timer still resends it.
  Release(cmd->second);
  auto error = envelope.Body<ErrorReply>();
  Status status = error.ok() ? error->ToStatus() : error.status();
  spdlog::warn("worker refused command task={} node={} error=\"{}\"", task_id.ToString(), node, status.ToString());
  if (cmd->second.kind == Kind::kBind && status.code() == StatusCode::kInvalidArgument) {
    // The node cannot run it as placed (e.g. its GPUs changed): fail the task
    // rather than resending forever.
    proposer_.Propose(state::RefuseBindCmd{task_id, node, status.message()}, [](const state::ApplyResult&) {});
  }
  Pump(Now());
}

void Dispatcher::NodeConnected(const std::string& node) {
  // Its tasks' commands go out again at the next tick; records of tasks that
  // left the node meanwhile go at the sweep.
  const state::NodeRecord* record = state_.FindNode(node);
  if (record == nullptr) return;
  for (const TaskId& id : record->tasks) {
    auto it = commands_.find(id);
    if (it != commands_.end()) Drop(it);  // a task on this node: its command went to the old connection
    recheck_.push_back(id);
  }
  // A new connection, a new window: what the old one held was never answered there.
  windows_.erase(node);
}

void Dispatcher::Reset() {
  commands_.clear();
  by_request_ = {};
  timers_ = {};
  recheck_.clear();
  windows_.clear();
  freed_.clear();
  waiting_ = 0;
  seen_seq_ = 0;  // everything due is considered again
}

}  // namespace gpool::control
