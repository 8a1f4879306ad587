// SessionsEndpoint: what rGPU sessions add to the client API (issue 33). A
// session is opened with SubmitJob (a spec with session.enabled), closed with
// CancelJob and listed with ListJobs/GetJob (JobsEndpoint); only its lease
// needs a request of its own, RenewSession.
#pragma once

#include "control/gateway/endpoint.h"
#include "protocol/message_type.h"

namespace gpool::control {

// A session spec as submitted by `actor`: the server admits its owner's key
// only (on a secured cluster, the key the caller authenticated with, never
// one it wrote into the spec), and it is never requeued.
void PrepareSessionSpec(const Actor& actor, JobSpec& spec);

class SessionsEndpoint final : public Endpoint {
 public:
  explicit SessionsEndpoint(RequestContext& ctx) : ctx_(ctx) {}
  std::vector<MessageType> Serves() const override { return {MessageType::kRenewSession}; }
  void Handle(const Request& request, const Envelope& envelope, int64_t now_ms) override;

 private:
  RequestContext& ctx_;
};

}  // namespace gpool::control
