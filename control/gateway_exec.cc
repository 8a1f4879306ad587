// Gateway: the exec requests (`gpool exec`). Each is resolved to a running
// task, authorised, and relayed to the task's node through the WorkerRelay;
// nothing is kept here between requests (messages_exec.h).
#include <random>

#include <spdlog/spdlog.h>

#include "control/frames.h"
#include "control/gateway.h"
#include "protocol/base/token_file.h"
#include "protocol/security/keys.h"

namespace gpool::control {

std::string RandomExecToken() {
  // A CURVE secret key where libzmq has CURVE, so the token doubles as the
  // key a task connects with (JobRecord::exec_key); random hex otherwise.
  if (auto pair = security::GenerateKeyPair(); pair.ok()) return pair->secret_key;
  std::random_device random;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (int i = 0; i < 4; ++i) {
    uint32_t word = random();
    for (int nibble = 0; nibble < 8; ++nibble, word >>= 4) token += kHex[word & 0xf];
  }
  return token;
}

Result<FoundTask> Gateway::ExecTarget(const std::string& name, uint64_t job_scope, const std::string& token,
                                      const Actor& actor) const {
  auto found = FindTaskByName(state_, name, job_scope);
  if (!found.ok()) return found.status();
  const state::JobRecord& job = *found->job;
  // A job token opens only its own job; it is compared only once the job is
  // known, so a wrong token learns nothing more than a missing task would.
  const bool entitled = Authorize(actor, Permission::kExecJob, JobTarget(job), state_).allowed;
  if (!entitled && (job.exec_token.empty() || token.empty() || !ConstantTimeEquals(token, job.exec_token))) {
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

void Gateway::OnExec(const Request& request, const Envelope& envelope, int64_t now_ms) {
  const std::string& peer = request.peer;
  const Actor& actor = request.actor;
  const uint64_t id = envelope.header().request_id;
  const std::string& token = envelope.header().token;
  switch (envelope.type()) {
    case MessageType::kExecStart: {
      auto msg = envelope.Body<ExecStart>();
      if (!msg.ok()) return Fail(peer, id, msg.status());
      return OnExecStart(peer, id, *msg, token, actor, now_ms);
    }
    case MessageType::kExecPoll: {
      auto msg = envelope.Body<ExecPoll>();
      if (!msg.ok()) return Fail(peer, id, msg.status());
      return OnExecPoll(peer, id, *msg, token, actor, now_ms);
    }
    case MessageType::kExecSignal: {
      auto msg = envelope.Body<ExecSignal>();
      if (!msg.ok()) return Fail(peer, id, msg.status());
      return OnExecSignal(peer, id, *msg, token, actor, now_ms);
    }
    default:
      return Fail(peer, id, Status::UnknownType("not an exec request"));
  }
}

void Gateway::OnExecStart(const std::string& peer, uint64_t request_id, const ExecStart& msg,
                          const std::string& token, const Actor& actor, int64_t now_ms) {
  Status valid = ValidateExecCommand(msg.command, msg.lease_ms);
  if (valid.ok()) valid = ValidateExecKey(msg.key);
  if (!valid.ok()) return Fail(peer, request_id, valid);
  auto target = ExecTarget(msg.task, msg.job_id, token, actor);
  const Request request{peer, request_id, MessageType::kExecStart, actor};
  if (!target.ok()) {
    spdlog::info("exec refused task={} error=\"{}\"", msg.task.substr(0, 128), target.status().ToString());
    AuditRequest(request, "task " + msg.task.substr(0, 128), false, target.status().message());
    return Fail(peer, request_id, target.status());
  }
  AuditRequest(request, "task " + target->task->id.ToString() + " argv0 " + msg.command[0].substr(0, 128), true, {});
  const state::TaskRecord& task = *target->task;
  const std::string node = task.node;
  const std::string task_id = task.id.ToString();
  spdlog::info("exec start task={} name={} node={} argv0={} by={}", task_id, msg.task.substr(0, 128), node,
               msg.command[0].substr(0, 128), actor.name);
  relay_.Ask<TaskExecStart, ExecStartReply>(
      node, TaskExecStart{task.id, msg.command, msg.lease_ms, msg.key}, now_ms,
      [this, peer, request_id, node, task_id](Result<ExecStartReply> reply) {
        if (!reply.ok()) return Fail(peer, request_id, reply.status());
        reply->task = task_id;
        reply->node = node;
        Reply(peer, MakeFrame(request_id, proposer_.epoch(), *reply));
      });
}

void Gateway::OnExecPoll(const std::string& peer, uint64_t request_id, const ExecPoll& msg, const std::string& token,
                         const Actor& actor, int64_t now_ms) {
  auto target = ExecTarget(msg.task, msg.job_id, token, actor);
  if (!target.ok()) return Fail(peer, request_id, target.status());
  // Leave room for the envelope and the other stream so a reply always fits a frame.
  const size_t frame_room = options_.limits.max_frame_bytes > 8192 ? (options_.limits.max_frame_bytes - 8192) / 2 : 1024;
  TaskExecPoll poll{target->task->id, msg.exec_id, msg.stdout_offset, msg.stderr_offset,
                    static_cast<uint32_t>(std::min<size_t>(msg.max_bytes, frame_room))};
  relay_.Ask<TaskExecPoll, ExecPollReply>(target->task->node, poll, now_ms,
                                          [this, peer, request_id](Result<ExecPollReply> reply) {
                                            if (!reply.ok()) return Fail(peer, request_id, reply.status());
                                            Reply(peer, MakeFrame(request_id, proposer_.epoch(), *reply));
                                          });
}

void Gateway::OnExecSignal(const std::string& peer, uint64_t request_id, const ExecSignal& msg,
                           const std::string& token, const Actor& actor, int64_t now_ms) {
  if (Status valid = ValidateExecSignal(msg.signal); !valid.ok()) return Fail(peer, request_id, valid);
  auto target = ExecTarget(msg.task, msg.job_id, token, actor);
  if (!target.ok()) return Fail(peer, request_id, target.status());
  spdlog::info("exec signal task={} exec_id={} signal={}", target->task->id.ToString(), msg.exec_id, msg.signal);
  relay_.Ask<TaskExecSignal, Ack>(target->task->node, TaskExecSignal{target->task->id, msg.exec_id, msg.signal},
                                  now_ms, [this, peer, request_id](Result<Ack> reply) {
                                    if (!reply.ok()) return Fail(peer, request_id, reply.status());
                                    Reply(peer, MakeFrame(request_id, proposer_.epoch(), Ack{}));
                                  });
}

}  // namespace gpool::control
