// ClusterState: what an rGPU session adds to its job's lifecycle (issue 33):
// the lease its owner renews, and where its server listens once started.
// How a session ended is derived from the job when asked (control/
// session_view.h), so apply records facts only.
#include "control/state/cluster_state.h"
#include "protocol/model/task_report.h"

namespace gpool::state {

ApplyResult ClusterState::ApplyRenewSession(int64_t now, const RenewSessionCmd& cmd) {
  ApplyResult result;
  result.job_id = cmd.job_id;
  JobRecord* job = MutableJob(cmd.job_id);
  if (job == nullptr || !job->spec.session.enabled) {
    result.status = Status::NotFound("session " + std::to_string(cmd.job_id) + " does not exist");
    return result;
  }
  result.job_state = std::string(ToString(job->state));
  // Renewing what has ended (or is closing) keeps nothing alive: say so,
  // so the client stops using it.
  if (IsTerminal(job->state) || job->cancel_requested) {
    result.status = Status::FailedPrecondition("session " + std::to_string(cmd.job_id) + " has ended (" +
                                               result.job_state + ")");
    return result;
  }
  job->UpdateSession([&](SessionRuntime& r) { r.renew_ms = std::max(r.renew_ms, now); });
  return result;
}

void ClusterState::NoteSessionStarted(JobRecord& job, const TaskEvent& event) {
  if (!job.spec.session.enabled || event.rgpu_endpoint.empty()) return;
  job.UpdateSession([&](SessionRuntime& r) {
    r.endpoint = event.rgpu_endpoint;
    r.server_key = event.rgpu_server_key;
  });
}

}  // namespace gpool::state
