// CreditEndpoint: credit accounts on the client API (issue 50). Credit
// "add" is an admin's write, validated and audited like a price change,
// applied as CreditCmd; "show" answers the accounts the caller may see:
// those paying for a queue it may read the usage of or submit to (a member
// sees the balance that decides whether its jobs start). Also the billing
// figures GetUsage's reply carries (BillingFor), by the same rule.
#pragma once

#include <string>
#include <vector>

#include "control/gateway/endpoint.h"
#include "protocol/message_type.h"
#include "protocol/messages_usage.h"

namespace gpool::control {

class CreditEndpoint final : public Endpoint {
 public:
  explicit CreditEndpoint(RequestContext& ctx) : ctx_(ctx) {}
  std::vector<MessageType> Serves() const override { return {MessageType::kCredit}; }
  void Handle(const Request& request, const Envelope& envelope, int64_t now_ms) override;

 private:
  RequestContext& ctx_;
};

// Whether `actor` may see the billing of `queue` (and the account paying for it).
bool BillingVisible(const Actor& actor, const std::string& queue, const state::ClusterState& state);
// The accounts paying for the queues `actor` may see (under `within`, when
// set), and the monthly bills of those queues overlapping [from, to).
void BillingFor(const Actor& actor, const std::string& within, int64_t from_ms, int64_t to_ms,
                const state::ClusterState& state, std::vector<BillingMonth>* months,
                std::vector<CreditAccount>* accounts);

}  // namespace gpool::control
