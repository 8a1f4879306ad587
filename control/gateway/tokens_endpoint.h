// TokensEndpoint: API tokens for the HTTP port on the client API (issue 48;
// protocol/messages_tokens.h). A user makes tokens for themselves over a
// CurveZMQ connection (a token cannot make tokens: a stolen read token must
// not mint a lasting write one); the token's text is drawn here, returned
// once, and only its SHA-256 goes into the log. ListTokens shows the
// caller's own, `all` every user's to those who may manage users;
// RevokeToken takes the caller's own, or anyone's for an admin.
#pragma once

#include "control/gateway/endpoint.h"
#include "protocol/message_type.h"

namespace gpool::control {

class TokensEndpoint final : public Endpoint {
 public:
  explicit TokensEndpoint(RequestContext& ctx) : ctx_(ctx) {}
  std::vector<MessageType> Serves() const override {
    return {MessageType::kCreateToken, MessageType::kListTokens, MessageType::kRevokeToken};
  }
  void Handle(const Request& request, const Envelope& envelope, int64_t now_ms) override;

 private:
  void Create(const Request& request, const Envelope& envelope);
  void List(const Request& request, const Envelope& envelope);
  void Revoke(const Request& request, const Envelope& envelope);
  RequestContext& ctx_;
};

// A new token: kApiTokenPrefix then kApiTokenRandomBytes random bytes as hex.
std::string NewApiToken();
// Whether `bearer` has the form of a token (so it is hashed and looked up).
bool LooksLikeApiToken(std::string_view bearer);

}  // namespace gpool::control
