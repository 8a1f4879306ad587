// UsersEndpoint: who am I, the one-time bootstrap of the first admin, user
// management (create, update, keys, role grants; admins only) and the audit
// stream (issue 31). Bootstrap names nobody but the caller: its own key
// becomes the admin's.
#pragma once

#include "control/gateway/endpoint.h"
#include "protocol/message_type.h"

namespace gpool::control {

class UsersEndpoint final : public Endpoint {
 public:
  explicit UsersEndpoint(RequestContext& ctx) : ctx_(ctx) {}
  std::vector<MessageType> Serves() const override {
    return {MessageType::kWhoAmI, MessageType::kBootstrap, MessageType::kUpdateUser, MessageType::kListUsers,
            MessageType::kListAudit};
  }
  void Handle(const Request& request, const Envelope& envelope, int64_t now_ms) override;

 private:
  RequestContext& ctx_;
};

}  // namespace gpool::control
