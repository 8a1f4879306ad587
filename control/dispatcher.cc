#include "control/dispatcher.h"

#include <spdlog/spdlog.h>

#include "control/frames.h"
#include "control/node_registry.h"
#include "control/training_env.h"

namespace gpool::control {

Dispatcher::Dispatcher(const DispatcherOptions& options, const state::ClusterState& state,
                       const NodeRegistry& registry, Outbox& outbox, Proposer& proposer)
    : options_(options), state_(state), registry_(registry), outbox_(outbox), proposer_(proposer) {}

bool Dispatcher::Due(const Sent* sent, Kind kind, int64_t now_ms) const {
  if (sent == nullptr || sent->kind != kind) return true;
  const int64_t wait = sent->acked ? options_.reconfirm_ms : options_.ack_timeout_ms;
  return now_ms - sent->sent_ms >= wait;
}

void Dispatcher::Tick(int64_t now_ms) {
  // Drop bookkeeping for tasks that finished.
  for (auto it = commands_.begin(); it != commands_.end();) {
    if (!state_.active_tasks().count(it->first)) {
      by_request_.erase(it->second.request_id);
      it = commands_.erase(it);
    } else {
      ++it;
    }
  }
  for (const TaskId& id : state_.active_tasks()) {
    const state::TaskRecord* task = state_.FindTask(id);
    if (task == nullptr) continue;
    Kind kind;
    if (task->stop_requested) {
      kind = Kind::kPreempt;
    } else if (task->state == TaskState::kBound) {
      kind = Kind::kBind;
    } else {
      continue;  // running and wanted: nothing to say
    }
    const std::string* peer = registry_.PeerFor(task->node);
    if (peer == nullptr) continue;  // node not connected; resent when it registers
    auto it = commands_.find(id);
    if (!Due(it == commands_.end() ? nullptr : &it->second, kind, now_ms)) continue;
    Send(*task, kind, *peer, now_ms);
  }
  for (auto it = log_fetches_.begin(); it != log_fetches_.end();) {
    if (now_ms >= it->second.deadline_ms) {
      auto done = std::move(it->second.done);
      it = log_fetches_.erase(it);
      done(Status::Unavailable("the node did not answer the log request in time"));
    } else {
      ++it;
    }
  }
}

void Dispatcher::Send(const state::TaskRecord& task, Kind kind, const std::string& peer, int64_t now_ms) {
  const state::JobRecord* job = state_.FindJob(task.id.job);
  if (job == nullptr) return;
  const uint64_t request_id = next_request_id_++;
  std::string frame;
  if (kind == Kind::kBind) {
    const TaskGroupSpec& group = job->spec.tasks[task.group];
    BindTask bind;
    bind.task = task.id;
    bind.job_name = job->spec.name;
    bind.num_tasks = static_cast<uint32_t>(job->tasks.size());
    bind.command = group.command;
    bind.env = TrainingEnv(state_, *job, task);
    for (const auto& [key, value] : group.env) bind.env[key] = value;  // the user's own win
    bind.gpu_indices = task.gpu_indices;
    bind.gpu_uuids = state_.GpuUuids(task, /*mig_instances=*/false);
    bind.cpu_milli = task.cpu_milli;
    bind.memory_mib = task.memory_mib;
    if (task.grant.shared) {
      bind.gpu_memory_mib = task.grant.gpu_memory_mib;
      bind.gpu_compute_pct = task.grant.gpu_compute_pct;
      bind.sharing_qos = task.grant.sharing_qos;
    }
    if (!task.grant.mig_profile.empty()) {
      bind.mig_profiles.assign(task.gpu_indices.size(), task.grant.mig_profile);
      bind.mig_starts.assign(task.gpu_indices.size(), task.grant.mig_start);
    }
    bind.cores = task.grant.cores;
    bind.numa_policy = job->spec.numa_policy;
    bind.numa_node = task.numa_node;
    frame = MakeFrame(request_id, proposer_.epoch(), bind);
  } else {
    PreemptTask preempt;
    preempt.task = task.id;
    preempt.grace_ms = task.stop_grace_ms != 0 ? task.stop_grace_ms : options_.preempt_grace_ms;
    preempt.reason = task.message;
    frame = MakeFrame(request_id, proposer_.epoch(), preempt);
  }
  auto& sent = commands_[task.id];
  by_request_.erase(sent.request_id);
  sent = Sent{kind, task.node, request_id, now_ms, false};
  by_request_[request_id] = task.id;
  spdlog::debug("dispatch command={} task={} node={} request={}", kind == Kind::kBind ? "bind" : "preempt",
                task.id.ToString(), task.node, request_id);
  outbox_.ToWorker(peer, std::move(frame));
}

void Dispatcher::OnWorkerReply(const Envelope& envelope) {
  const uint64_t request_id = envelope.header().request_id;
  if (auto fetch = log_fetches_.find(request_id); fetch != log_fetches_.end()) {
    auto done = std::move(fetch->second.done);
    log_fetches_.erase(fetch);
    if (envelope.type() == MessageType::kErrorReply) {
      auto error = envelope.Body<ErrorReply>();
      done(error.ok() ? error->ToStatus() : error.status());
    } else {
      done(envelope.Body<FetchLogReply>());
    }
    return;
  }
  auto it = by_request_.find(request_id);
  if (it == by_request_.end()) return;  // a reply to a command we have since replaced
  const TaskId task_id = it->second;
  auto cmd = commands_.find(task_id);
  if (cmd == commands_.end()) return;
  if (envelope.type() == MessageType::kAck) {
    cmd->second.acked = true;
    return;
  }
  auto error = envelope.Body<ErrorReply>();
  Status status = error.ok() ? error->ToStatus() : error.status();
  spdlog::warn("worker refused command task={} node={} error=\"{}\"", task_id.ToString(), cmd->second.node,
               status.ToString());
  if (cmd->second.kind == Kind::kBind && status.code() == StatusCode::kInvalidArgument) {
    // The node cannot run it as placed (e.g. its GPUs changed): fail the task
    // rather than resending forever.
    TaskEvent event;
    event.node = cmd->second.node;
    event.task = task_id;
    event.kind = "failed";
    event.exit_code = 127;
    event.message = "worker refused the task: " + status.message();
    proposer_.Propose(state::TaskEventCmd{event}, [](const state::ApplyResult&) {});
  }
}

void Dispatcher::FetchLog(const std::string& node, const TaskId& task, uint32_t max_bytes, int64_t now_ms,
                          LogCallback done) {
  const std::string* peer = registry_.PeerFor(node);
  if (peer == nullptr) {
    done(Status::Unavailable("node " + node + " is not connected"));
    return;
  }
  const uint64_t request_id = next_request_id_++;
  log_fetches_[request_id] = LogFetch{now_ms + options_.log_fetch_timeout_ms, std::move(done)};
  outbox_.ToWorker(*peer, MakeFrame(request_id, proposer_.epoch(), gpool::FetchLog{task, max_bytes}));
}

void Dispatcher::ForgetNode(const std::string& node) {
  for (auto it = commands_.begin(); it != commands_.end();) {
    if (it->second.node == node) {
      by_request_.erase(it->second.request_id);
      it = commands_.erase(it);
    } else {
      ++it;
    }
  }
}

void Dispatcher::Reset(const Status& why) {
  commands_.clear();
  by_request_.clear();
  auto fetches = std::move(log_fetches_);
  log_fetches_.clear();
  for (auto& [id, fetch] : fetches) fetch.done(why);
}

}  // namespace gpool::control
