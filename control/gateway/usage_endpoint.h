// UsageEndpoint: usage accounting on the client API (issue 34). GetUsage is
// a read of the applied state (after the read barrier), filtered to what the
// caller may see: admins everything, a queue-admin its subtree, anyone their
// own usage (Permission::kReadUsage per (user, queue)). UpdatePrices shows the
// committed price table to anyone with a role, and sets it for admins only,
// audited like every write.
#pragma once

#include "control/gateway/endpoint.h"
#include "protocol/message_type.h"

namespace gpool::control {

class UsageEndpoint final : public Endpoint {
 public:
  explicit UsageEndpoint(RequestContext& ctx) : ctx_(ctx) {}
  std::vector<MessageType> Serves() const override { return {MessageType::kGetUsage, MessageType::kUpdatePrices}; }
  void Handle(const Request& request, const Envelope& envelope, int64_t now_ms) override;

 private:
  RequestContext& ctx_;
};

}  // namespace gpool::control
