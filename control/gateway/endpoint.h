// Endpoint: one family of client requests (jobs, nodes, queues, users,
// sessions, exec, cluster, usage, watches, snapshots), in the manner of
// Nomad's nomad/*_endpoint.go. The Gateway (control/gateway.h) decodes the
// envelope, resolves the caller and routes by message type to the endpoint
// that serves it; the endpoint checks permission, validates, and reads or
// proposes through the shared RequestContext. Each is tested alone
// (control/gateway/endpoints_test.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "control/gateway/request_context.h"
#include "protocol/envelope.h"
#include "protocol/message_type.h"

namespace gpool::control {

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  // The message types this endpoint answers; each type has one endpoint.
  virtual std::vector<MessageType> Serves() const = 0;
  // `request.type` is one of Serves().
  virtual void Handle(const Request& request, const Envelope& envelope, int64_t now_ms) = 0;
  // Every loop turn, leader or not.
  virtual void Tick(int64_t now_ms) { (void)now_ms; }
};

}  // namespace gpool::control
