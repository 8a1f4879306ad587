// JobsEndpoint: SubmitJob, CancelJob, ListJobs, GetJob, ExplainJob and
// GetTaskLog. A submit is checked at the edge (spec size and rules, the pool
// against the nodes as they are now) and answered only once the job is
// committed, so a job id is never handed out before the job is durable. Each
// job gets an exec token (and, with CURVE, the key pair it is the secret of)
// that authorises exec into its own tasks and nothing else.
#pragma once

#include <string>

#include "control/gateway/endpoint.h"
#include "protocol/message_type.h"
#include "protocol/messages_client.h"

namespace gpool::control {

// 128 bits of randomness: a CURVE secret key where libzmq has CURVE (so the
// token doubles as the key a task connects with), else 32 hex digits.
std::string RandomExecToken();

class JobsEndpoint final : public Endpoint {
 public:
  explicit JobsEndpoint(RequestContext& ctx) : ctx_(ctx) {}
  std::vector<MessageType> Serves() const override;
  void Handle(const Request& request, const Envelope& envelope, int64_t now_ms) override;

 private:
  void OnSubmit(const Request& request, SubmitJob msg);
  // ResourceExhausted when a session would take its user past
  // GatewayOptions::max_sessions_per_user (admins are not held to it).
  Status CheckSessionRoom(const Actor& actor, const JobSpec& spec) const;
  void OnCancel(const Request& request, const CancelJob& msg);
  void OnGetJob(const Request& request, uint64_t job_id);
  void OnExplain(const Request& request, uint64_t job_id);
  void OnGetTaskLog(const Request& request, const GetTaskLog& msg, int64_t now_ms);
  ListJobsReply ListJobsNow(const ListJobs& msg, const Actor& actor) const;

  RequestContext& ctx_;
};

}  // namespace gpool::control
