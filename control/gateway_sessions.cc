// Gateway: what rGPU sessions add to the client API (issue 33). A session is
// opened with SubmitJob (a spec with session.enabled), closed with CancelJob
// and listed with ListJobs/GetJob; only its lease needs a request of its own.
#include <chrono>

#include <spdlog/spdlog.h>

#include "control/frames.h"
#include "control/gateway.h"
#include "control/session_view.h"

namespace gpool::control {

void Gateway::PrepareSessionSpec(const Actor& actor, JobSpec& spec) {
  if (!spec.session.enabled) return;
  // The server admits its owner's key only: on a secured cluster that is the
  // key the caller authenticated with, never one it wrote into the spec.
  if (!actor.key.empty()) spec.session.owner_key = actor.key;
  // Never requeued: a client holding device pointers cannot follow its
  // session to another GPU (session_view.h says how it ended instead).
  spec.restart.policy = "never";
}

int64_t Gateway::WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Gateway::OnRenewSession(const Request& request, const RenewSession& msg) {
  const std::string& peer = request.peer;
  const uint64_t request_id = request.id;
  const auto* job = state_.FindJob(JobId(msg.job_id));
  if (job == nullptr || !job->spec.session.enabled) {
    return Fail(peer, request_id, Status::NotFound("session " + std::to_string(msg.job_id) + " does not exist"));
  }
  // Who may close a session may keep it open. Renewals are not audited: one
  // every third of a lease per session would bury what the audit is for;
  // the open and the close are.
  if (!Permit(request, Permission::kCancelJob, JobTarget(*job), "session " + std::to_string(msg.job_id))) return;
  const uint64_t job_id = msg.job_id;
  proposer_.Propose(state::RenewSessionCmd{job_id}, [this, peer, request_id, job_id](const state::ApplyResult& result) {
    if (!result.status.ok()) return Fail(peer, request_id, result.status);
    RenewSessionReply reply{job_id, {}};
    if (const auto* renewed = state_.FindJob(JobId(job_id)); renewed != nullptr) {
      reply.session = ToSessionInfo(*renewed, WallNowMs());
    }
    spdlog::debug("session renewed job={}", job_id);
    Reply(peer, MakeFrame(request_id, proposer_.epoch(), reply));
  });
}

}  // namespace gpool::control
