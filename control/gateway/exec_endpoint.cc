#include "control/gateway/exec_endpoint.h"

#include <algorithm>
#include <optional>

#include <spdlog/spdlog.h>

#include "protocol/base/sha256.h"
#include "protocol/base/token_file.h"
#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_exec.h"
#include "protocol/security/task_exec_key.h"

namespace gpool::control {

bool ExecEndpoint::HeldByLiveTask(const state::JobRecord& job, const std::string& token) const {
  if (job.exec_token.empty() || token.empty()) return false;
  const auto live = [&](const TaskId& id) {
    return id.job == job.id && id.index < job.tasks.size() && job.tasks[id.index].id == id &&
           state::HoldsResources(job.tasks[id.index].state);
  };
  const std::string digest = Sha256::Of(token);
  if (auto it = task_of_token_.find(digest); it != task_of_token_.end()) {
    if (it->second.job == job.id) return live(it->second);
    return false;  // another job's task's token
  }
  // Every live task is compared (no early exit), so the time taken says
  // nothing about which task, if any, the token is close to.
  std::optional<TaskId> held;
  for (const state::TaskRecord& task : job.tasks) {
    if (!state::HoldsResources(task.state)) continue;
    auto secret = security::TaskExecSecret(job.exec_token, task.id);
    if (secret.ok() && ConstantTimeEquals(token, *secret)) held = task.id;
  }
  if (!held) return false;
  if (task_of_token_.size() >= kMaxTokenTasks) task_of_token_.clear();
  task_of_token_[digest] = *held;
  return true;
}

Result<FoundTask> ExecEndpoint::ExecTarget(const std::string& name, uint64_t job_scope, const std::string& token,
                                      const Actor& actor) const {
  auto found = FindTaskByName(ctx_.state(), name, job_scope);
  if (!found.ok()) return found.status();
  const state::JobRecord& job = *found->job;
  // A task's exec token opens only its own job, and only while that task is
  // bound or running; it is compared only once the job is known, so a wrong
  // token learns nothing more than a missing task would. The job's own
  // secret is no task's token: it opens nothing (issue 48).
  const bool entitled = Authorize(actor, Permission::kExecJob, RequestContext::JobTarget(job), ctx_.state()).allowed;
  if (!entitled && !HeldByLiveTask(job, token)) {
    if (actor.kind == Actor::Kind::kUser) {
      return Status::PermissionDenied(actor.name + " may not " + std::string(PermissionName(Permission::kExecJob)) +
                                      " on job " + std::to_string(job.id.value()) + " (a job of " + job.spec.user +
                                      ")");
    }
    return Status::Unauthenticated("the token does not authorise exec into job " + std::to_string(job.id.value()));
  }
  const state::TaskRecord& task = *found->task;
  if (task.state != TaskState::kRunning || task.node.empty()) {
    return Status::FailedPrecondition("task " + name + " (" + task.id.ToString() + ") is " +
                                      std::string(ToString(task.state)) + ", not Running: exec needs a running task");
  }
  return found;
}

std::string ExecEndpoint::StreamOwner(const Actor& actor, uint64_t job) const {
  if (Authorize(actor, Permission::kManageUsers, {}, ctx_.state()).allowed) return {};
  if (actor.kind == Actor::Kind::kUser) return actor.name;
  return "job " + std::to_string(job);
}

void ExecEndpoint::Tick(int64_t now_ms) {
  if (!ctx_.proposer().leading()) {
    if (streams_.open() > 0) streams_.Clear();
    return;
  }
  streams_.Expire(now_ms);
}

void ExecEndpoint::Handle(const Request& request, const Envelope& envelope, int64_t now_ms) {
  ctx_.AfterBarrier(request, [this, request, envelope, now_ms] { Serve(request, envelope, now_ms); });
}

void ExecEndpoint::Serve(const Request& request, const Envelope& envelope, int64_t now_ms) {
  const std::string& peer = request.peer;
  const Actor& actor = request.actor;
  const uint64_t id = envelope.header().request_id;
  const std::string& token = envelope.header().token;
  switch (envelope.type()) {
    case MessageType::kExecStart: {
      auto msg = envelope.Body<ExecStart>();
      if (!msg.ok()) return ctx_.Fail(peer, id, msg.status());
      return OnExecStart(peer, id, *msg, token, actor, now_ms);
    }
    case MessageType::kExecPoll: {
      auto msg = envelope.Body<ExecPoll>();
      if (!msg.ok()) return ctx_.Fail(peer, id, msg.status());
      return OnExecPoll(peer, id, *msg, token, actor, now_ms);
    }
    case MessageType::kExecSignal: {
      auto msg = envelope.Body<ExecSignal>();
      if (!msg.ok()) return ctx_.Fail(peer, id, msg.status());
      return OnExecSignal(peer, id, *msg, token, actor, now_ms);
    }
    default:
      return ctx_.Fail(peer, id, Status::UnknownType("not an exec request"));
  }
}

void ExecEndpoint::OnExecStart(const std::string& peer, uint64_t request_id, const ExecStart& msg,
                          const std::string& token, const Actor& actor, int64_t now_ms) {
  Status valid = ValidateExecCommand(msg.command, msg.lease_ms);
  if (valid.ok()) valid = ValidateExecKey(msg.key);
  if (!valid.ok()) return ctx_.Fail(peer, request_id, valid);
  auto target = ExecTarget(msg.task, msg.job_id, token, actor);
  const Request request{peer, request_id, MessageType::kExecStart, actor};
  if (!target.ok()) {
    spdlog::info("exec refused task={} error=\"{}\"", msg.task.substr(0, 128), target.status().ToString());
    ctx_.AuditRequest(request, "task " + msg.task.substr(0, 128), false, target.status().message());
    return ctx_.Fail(peer, request_id, target.status());
  }
  const std::string owner = StreamOwner(actor, target->job->id.value());
  if (!owner.empty()) {
    if (Status room = streams_.Reserve(owner); !room.ok()) return ctx_.Fail(peer, request_id, room);
  }
  ctx_.AuditRequest(request, "task " + target->task->id.ToString() + " argv0 " + msg.command[0].substr(0, 128), true, {});
  const state::TaskRecord& task = *target->task;
  const std::string node = task.node;
  const std::string task_id = task.id.ToString();
  spdlog::info("exec start task={} name={} node={} argv0={} by={}", task_id, msg.task.substr(0, 128), node,
               msg.command[0].substr(0, 128), actor.name);
  ctx_.relay().Ask<TaskExecStart, ExecStartReply>(
      node, TaskExecStart{task.id, msg.command, msg.lease_ms, msg.key}, now_ms,
      [this, peer, request_id, node, task_id, owner, lease_ms = msg.lease_ms,
       now_ms](Result<ExecStartReply> reply) {
        if (!owner.empty()) {
          reply.ok() ? streams_.Started(owner, node, reply->exec_id, lease_ms, now_ms) : streams_.Release(owner);
        }
        if (!reply.ok()) return ctx_.Fail(peer, request_id, reply.status());
        reply->task = task_id;
        reply->node = node;
        ctx_.Reply(peer, MakeFrame(request_id, ctx_.proposer().epoch(), *reply));
      });
}

void ExecEndpoint::OnExecPoll(const std::string& peer, uint64_t request_id, const ExecPoll& msg, const std::string& token,
                         const Actor& actor, int64_t now_ms) {
  auto target = ExecTarget(msg.task, msg.job_id, token, actor);
  if (!target.ok()) return ctx_.Fail(peer, request_id, target.status());
  // Leave room for the envelope and the other stream so a reply always fits a frame.
  const size_t frame_room = ctx_.options().limits.max_frame_bytes > 8192 ? (ctx_.options().limits.max_frame_bytes - 8192) / 2 : 1024;
  TaskExecPoll poll{target->task->id, msg.exec_id, msg.stdout_offset, msg.stderr_offset,
                    static_cast<uint32_t>(std::min<size_t>(msg.max_bytes, frame_room))};
  const std::string node = target->task->node;
  const uint64_t exec_id = msg.exec_id;
  ctx_.relay().Ask<TaskExecPoll, ExecPollReply>(
      node, poll, now_ms, [this, peer, request_id, node, exec_id, now_ms](Result<ExecPollReply> reply) {
        // Exited and drained, or forgotten by the worker: its slot is free.
        if (reply.ok() ? reply->exited : reply.status().code() == StatusCode::kNotFound) {
          streams_.Ended(node, exec_id);
        } else if (reply.ok()) {
          streams_.Polled(node, exec_id, now_ms);
        }
        if (!reply.ok()) return ctx_.Fail(peer, request_id, reply.status());
        ctx_.Reply(peer, MakeFrame(request_id, ctx_.proposer().epoch(), *reply));
      });
}

void ExecEndpoint::OnExecSignal(const std::string& peer, uint64_t request_id, const ExecSignal& msg,
                           const std::string& token, const Actor& actor, int64_t now_ms) {
  if (Status valid = ValidateExecSignal(msg.signal); !valid.ok()) return ctx_.Fail(peer, request_id, valid);
  auto target = ExecTarget(msg.task, msg.job_id, token, actor);
  if (!target.ok()) return ctx_.Fail(peer, request_id, target.status());
  spdlog::info("exec signal task={} exec_id={} signal={}", target->task->id.ToString(), msg.exec_id, msg.signal);
  ctx_.relay().Ask<TaskExecSignal, Ack>(target->task->node, TaskExecSignal{target->task->id, msg.exec_id, msg.signal},
                                  now_ms, [this, peer, request_id](Result<Ack> reply) {
                                    if (!reply.ok()) return ctx_.Fail(peer, request_id, reply.status());
                                    ctx_.Reply(peer, MakeFrame(request_id, ctx_.proposer().epoch(), Ack{}));
                                  });
}

}  // namespace gpool::control
