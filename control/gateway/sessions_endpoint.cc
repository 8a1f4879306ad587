#include "control/gateway/sessions_endpoint.h"

#include <spdlog/spdlog.h>

#include "control/session_view.h"
#include "protocol/messages_client.h"

namespace gpool::control {

void PrepareSessionSpec(const Actor& actor, JobSpec& spec) {
  if (!spec.session.enabled) return;
  if (!actor.key.empty()) spec.session.owner_key = actor.key;
  // Never requeued: a client holding device pointers cannot follow its
  // session to another GPU (session_view.h says how it ended instead).
  spec.restart.policy = "never";
}

void SessionsEndpoint::Handle(const Request& request, const Envelope& envelope, int64_t now_ms) {
  (void)now_ms;
  auto msg = ctx_.Decode<RenewSession>(request, envelope);
  if (!msg) return;
  const auto* job = ctx_.state().FindJob(JobId(msg->job_id));
  if (job == nullptr || !job->spec.session.enabled) {
    return ctx_.Fail(request, Status::NotFound("session " + std::to_string(msg->job_id) + " does not exist"));
  }
  // Who may close a session may keep it open. Renewals are not audited: one
  // every third of a lease per session would bury what the audit is for;
  // the open and the close are.
  if (!ctx_.Permit(request, Permission::kCancelJob, RequestContext::JobTarget(*job),
                   "session " + std::to_string(msg->job_id))) {
    return;
  }
  const uint64_t job_id = msg->job_id;
  ctx_.proposer().Propose(state::RenewSessionCmd{job_id}, [this, request, job_id](const state::ApplyResult& result) {
    if (!result.status.ok()) return ctx_.Fail(request, result.status);
    RenewSessionReply reply{job_id, {}};
    if (const auto* renewed = ctx_.state().FindJob(JobId(job_id)); renewed != nullptr) {
      reply.session = ToSessionInfo(*renewed, RequestContext::WallNowMs());
    }
    spdlog::debug("session renewed job={}", job_id);
    ctx_.Answer(request, reply);
  });
}

}  // namespace gpool::control
