// QueuesEndpoint: UpdateQueue (create, update, delete) and ListQueues. A
// queue-admin changes what is below its queue: an existing queue there, and
// where one goes (a create's or a move's parent), so no queue leaves the
// subtree or is raised to the admin's own level. Granting a class (issue 50)
// follows class_grants.h.
#pragma once

#include "control/gateway/endpoint.h"
#include "protocol/message_type.h"
#include "protocol/model/queue_update.h"

namespace gpool::control {

class QueuesEndpoint final : public Endpoint {
 public:
  explicit QueuesEndpoint(RequestContext& ctx) : ctx_(ctx) {}
  std::vector<MessageType> Serves() const override { return {MessageType::kUpdateQueue, MessageType::kListQueues}; }
  void Handle(const Request& request, const Envelope& envelope, int64_t now_ms) override;

 private:
  void OnUpdate(const Request& request, UpdateQueue msg);

  RequestContext& ctx_;
};

}  // namespace gpool::control
