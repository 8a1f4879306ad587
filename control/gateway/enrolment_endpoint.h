// EnrolmentEndpoint: node enrolment by admission (issue 48). Lists pending
// enrolments, approves or rejects them, and mints, lists and revokes join
// tokens, all for admins only (kManageNodes) and audited. A join token is
// shown once, in the reply that mints it: state keeps its SHA-256.
#pragma once

#include <functional>
#include <string>

#include "control/gateway/endpoint.h"
#include "protocol/messages_enrolment.h"

namespace gpool::control {

class EnrolmentEndpoint final : public Endpoint {
 public:
  // `new_token`: draws a join token's secret; nullptr: 192 random bits.
  explicit EnrolmentEndpoint(RequestContext& ctx, std::function<std::string()> new_token = nullptr)
      : ctx_(ctx), new_token_(std::move(new_token)) {}
  std::vector<MessageType> Serves() const override { return {MessageType::kEnrolment}; }
  void Handle(const Request& request, const Envelope& envelope, int64_t now_ms) override;

  // The longest a join token may live: long-lived tokens are credentials
  // left lying around.
  static constexpr uint64_t kMaxTokenTtlMs = 7ull * 24 * 3600 * 1000;

 private:
  void OnDecide(const Request& request, Enrolment msg);
  void OnCreateToken(const Request& request, Enrolment msg);
  void OnRevokeToken(const Request& request, Enrolment msg);

  RequestContext& ctx_;
  std::function<std::string()> new_token_;
};

}  // namespace gpool::control
