#include "control/gateway/jobs_endpoint.h"

#include <algorithm>
#include <random>

#include <spdlog/spdlog.h>

#include "control/class_grants.h"
#include "control/gateway/sessions_endpoint.h"
#include "control/views.h"
#include "protocol/message_type.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_worker.h"
#include "protocol/model/users.h"
#include "protocol/security/keys.h"

namespace gpool::control {

std::string RandomExecToken() {
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

std::vector<MessageType> JobsEndpoint::Serves() const {
  return {MessageType::kSubmitJob, MessageType::kCancelJob,  MessageType::kListJobs,
          MessageType::kGetJob,    MessageType::kExplainJob, MessageType::kGetTaskLog};
}

void JobsEndpoint::Handle(const Request& request, const Envelope& envelope, int64_t now_ms) {
  switch (request.type) {
    case MessageType::kSubmitJob:
      if (auto msg = ctx_.Decode<SubmitJob>(request, envelope)) OnSubmit(request, std::move(*msg));
      return;
    case MessageType::kCancelJob:
      if (auto msg = ctx_.Decode<CancelJob>(request, envelope)) OnCancel(request, *msg);
      return;
    case MessageType::kListJobs:
      if (auto msg = ctx_.Decode<ListJobs>(request, envelope)) {
        ctx_.AfterBarrier(request, [this, request, msg = *msg] { ctx_.Answer(request, ListJobsNow(msg, request.actor)); });
      }
      return;
    case MessageType::kGetJob:
      if (auto msg = ctx_.Decode<GetJob>(request, envelope)) {
        ctx_.AfterBarrier(request, [this, request, job_id = msg->job_id] { OnGetJob(request, job_id); });
      }
      return;
    case MessageType::kExplainJob:
      if (auto msg = ctx_.Decode<ExplainJob>(request, envelope)) {
        ctx_.AfterBarrier(request, [this, request, job_id = msg->job_id] { OnExplain(request, job_id); });
      }
      return;
    default:
      if (auto msg = ctx_.Decode<GetTaskLog>(request, envelope)) {
        ctx_.AfterBarrier(request, [this, request, msg = *msg, now_ms] { OnGetTaskLog(request, msg, now_ms); });
      }
      return;
  }
}

Status JobsEndpoint::CheckSessionRoom(const Actor& actor, const JobSpec& spec) const {
  if (!spec.session.enabled) return Status::Ok();
  if (Authorize(actor, Permission::kManageUsers, {}, ctx_.state()).allowed) return Status::Ok();
  const uint32_t limit = ctx_.options().max_sessions_per_user;
  uint32_t open = 0;
  // A walk over the jobs at a session's submit only (rare, and refused
  // ones cost no more than accepted ones).
  for (const auto& [id, job] : ctx_.state().jobs()) {
    if (job.spec.session.enabled && job.spec.user == spec.user && !IsTerminal(job.state)) ++open;
  }
  if (open < limit) return Status::Ok();
  spdlog::info("session refused user={} open={} limit={}", spec.user, open, limit);
  return Status::ResourceExhausted(spec.user + " has " + std::to_string(open) +
                                   " sessions open, the most one user may (--max-sessions-per-user " +
                                   std::to_string(limit) + "); close one first");
}

void JobsEndpoint::OnSubmit(const Request& request, SubmitJob msg) {
  const std::string& peer = request.peer;
  const uint64_t request_id = request.id;
  const GatewayOptions& options = ctx_.options();
  // The owner is who the transport authenticated, never what the client wrote.
  if (request.actor.kind == Actor::Kind::kUser) msg.spec.user = request.actor.name;
  PrepareSessionSpec(request.actor, msg.spec);
  if (!ctx_.Permit(request, Permission::kSubmit, Target{msg.spec.user, msg.spec.queue}, "queue " + msg.spec.queue)) {
    return;
  }
  Status valid = CheckJobSpecSize(msg.spec, options.max_spec_bytes);
  if (valid.ok()) valid = ValidateJobSpec(msg.spec, options.spec_limits);
  if (!valid.ok()) return ctx_.Fail(request, valid.WithContext("spec"));
  // Issue 50: high and system need a grant on the queue (class_grants.h);
  // a refusal is audited as a permission refusal is.
  if (Status granted = CheckSubmitClass(request.actor, msg.spec.priority_class, msg.spec.queue, ctx_.state());
      !granted.ok()) {
    ctx_.AuditRequest(request, "queue " + msg.spec.queue, false, "class " + msg.spec.priority_class + " not granted");
    spdlog::info("request refused user={} request=SubmitJob queue={} class={} reason=class-not-granted",
                 request.actor.name, msg.spec.queue, msg.spec.priority_class);
    return ctx_.Fail(request, granted);
  }
  // Issue 48: an owner without a uid (a user created before uids were
  // allocated) would run as the worker's --task-user, shared with every
  // other such owner: refused until an admin gives it one.
  if (const UserSpec* owner = ctx_.state().FindUser(msg.spec.user); owner != nullptr && owner->uid < 0) {
    return ctx_.Fail(request, Status::FailedPrecondition(
                                  "user " + owner->name + " has no uid to run tasks as (created before uids were "
                                  "allocated); an admin gives it one: gpool admin user update " + owner->name));
  }
  if (Status room = CheckSessionRoom(request.actor, msg.spec); !room.ok()) return ctx_.Fail(request, room);
  // Checked at the edge against the nodes as they are now (apply does not:
  // a log replays the same whatever the nodes were).
  if (Status resolved = ctx_.state().ResolveSubmitPool(msg.spec); !resolved.ok()) return ctx_.Fail(request, resolved);
  if (Status pool = ctx_.state().CheckSubmitPool(msg.spec.queue, msg.spec.pool); !pool.ok()) {
    return ctx_.Fail(request, pool);
  }
  if (msg.idempotency_key.size() > 256) {
    return ctx_.Fail(request, Status::InvalidArgument("idempotency_key: longer than 256 bytes"));
  }
  // A pair made ahead (ExecKeyPool) costs the loop nothing; else one is made here.
  auto ahead = !options.new_exec_token && options.new_exec_pair ? options.new_exec_pair()
                                                                : Result<security::KeyPair>(Status::NotFound(""));
  std::string exec_token = ahead.ok()                ? ahead->secret_key
                           : options.new_exec_token ? options.new_exec_token()
                                                    : RandomExecToken();
  auto exec_pair = ahead.ok() ? std::move(ahead) : security::KeyPairOfSecret(exec_token);
  std::string exec_key = exec_pair.ok() ? exec_pair->public_key : std::string();
  ctx_.ProposeAudited(state::SubmitJobCmd{std::move(msg.spec), std::move(msg.idempotency_key), std::move(exec_token),
                                          std::move(exec_key)},
                      [this, peer, request_id](const state::ApplyResult& result) {
                        if (!result.status.ok()) return ctx_.Fail(peer, request_id, result.status);
                        spdlog::info("job submitted job={} duplicate={}", result.job_id, result.duplicate);
                        ctx_.Reply(peer, MakeFrame(request_id, ctx_.proposer().epoch(),
                                                   SubmitJobReply{result.job_id, result.duplicate}));
                      });
}

void JobsEndpoint::OnCancel(const Request& request, const CancelJob& msg) {
  const std::string& peer = request.peer;
  const uint64_t request_id = request.id;
  // A job that does not exist fails in apply as before, with its own error;
  // only an existing job has an owner to check against.
  if (const auto* job = ctx_.state().FindJob(JobId(msg.job_id)); job != nullptr) {
    if (!ctx_.Permit(request, Permission::kCancelJob, RequestContext::JobTarget(*job),
                     "job " + std::to_string(msg.job_id))) {
      return;
    }
  }
  ctx_.ProposeAudited(state::CancelJobCmd{msg.job_id, msg.grace_ms},
                      [this, peer, request_id](const state::ApplyResult& result) {
                        if (!result.status.ok()) return ctx_.Fail(peer, request_id, result.status);
                        spdlog::info("job cancel committed job={} state={}", result.job_id, result.job_state);
                        ctx_.Reply(peer, MakeFrame(request_id, ctx_.proposer().epoch(),
                                                   CancelJobReply{result.job_id, result.job_state}));
                      });
}

void JobsEndpoint::OnGetJob(const Request& request, uint64_t job_id) {
  const state::ClusterState& state = ctx_.state();
  const auto* job = state.FindJob(JobId(job_id));
  if (job == nullptr) return ctx_.Fail(request, JobNotFound(state, job_id));
  const Target target = RequestContext::JobTarget(*job);
  if (!ctx_.Permit(request, Permission::kReadJob, target, "job " + std::to_string(job_id))) return;
  GetJobReply reply = ToJobDetail(*job, state, RequestContext::WallNowMs());
  // Others' secrets stay theirs: env is shown to who may read logs.
  if (!Authorize(request.actor, Permission::kReadJobSecrets, target, state).allowed) {
    for (auto& group : reply.spec.tasks) group.env.clear();
  }
  for (auto& task : reply.tasks) {
    const state::TaskRecord* record = state.FindTask(TaskId{job->id, task.index, task.attempt});
    task.gpu_memory_used_mib = record == nullptr ? -1 : ctx_.workers().GpuMemoryUsed(record->node, record->id);
  }
  ctx_.Answer(request, reply);
}

void JobsEndpoint::OnExplain(const Request& request, uint64_t job_id) {
  const auto* job = ctx_.state().FindJob(JobId(job_id));
  if (job == nullptr) return ctx_.Fail(request, JobNotFound(ctx_.state(), job_id));
  if (!ctx_.Permit(request, Permission::kReadJob, RequestContext::JobTarget(*job), "job " + std::to_string(job_id))) {
    return;
  }
  ctx_.Answer(request, ToExplanation(*job, ctx_.state(), RequestContext::WallNowMs()));
}

void JobsEndpoint::OnGetTaskLog(const Request& request, const GetTaskLog& msg, int64_t now_ms) {
  const auto* job = ctx_.state().FindJob(JobId(msg.job_id));
  if (job == nullptr) return ctx_.Fail(request, JobNotFound(ctx_.state(), msg.job_id));
  if (!ctx_.Permit(request, Permission::kReadJobSecrets, RequestContext::JobTarget(*job),
                   "job " + std::to_string(msg.job_id))) {
    return;
  }
  if (msg.task_index >= job->tasks.size()) {
    return ctx_.Fail(request, Status::NotFound("job " + std::to_string(msg.job_id) + " has no task " +
                                               std::to_string(msg.task_index) + " (it has " +
                                               std::to_string(job->tasks.size()) + ")"));
  }
  const auto& task = job->tasks[msg.task_index];
  if (task.node.empty()) {
    return ctx_.Fail(request, Status::NotFound("task " + task.id.ToString() + " has not run yet, so it has no log"));
  }
  // Leave room for the envelope so the worker's reply always fits a frame.
  const size_t max_frame = ctx_.options().limits.max_frame_bytes;
  const size_t frame_room = max_frame > 4096 ? max_frame - 4096 : 1024;
  const uint32_t max_bytes = static_cast<uint32_t>(std::min<size_t>(msg.max_bytes, frame_room));
  ctx_.relay().Ask<FetchLog, FetchLogReply>(
      task.node, FetchLog{task.id, max_bytes}, now_ms, [this, request](Result<FetchLogReply> result) {
        if (!result.ok()) return ctx_.Fail(request, result.status());
        ctx_.Answer(request, GetTaskLogReply{result->data, result->size, result->truncated, result->dropped});
      });
}

ListJobsReply JobsEndpoint::ListJobsNow(const ListJobs& msg, const Actor& actor) const {
  const state::ClusterState& state = ctx_.state();
  ListJobsReply reply;
  const size_t limit = msg.limit == 0 ? state.jobs().size() : msg.limit;
  for (auto it = state.jobs().rbegin(); it != state.jobs().rend() && reply.jobs.size() < limit; ++it) {
    if (!msg.include_finished && IsTerminal(it->second.state)) continue;
    if (msg.sessions_only && !it->second.spec.session.enabled) continue;
    // Each caller lists the jobs it may read (its own, its queues', or all).
    if (!Authorize(actor, Permission::kReadJob, RequestContext::JobTarget(it->second), state).allowed) continue;
    reply.jobs.push_back(ToJobSummary(it->second, RequestContext::WallNowMs()));
  }
  return reply;
}

}  // namespace gpool::control
