// API tokens for the HTTP port (client -> coordinator, port 7400; issue 48;
// docs/protocol.md "API tokens"). Any user makes tokens for themselves; a
// token's text is in CreateTokenReply once and nowhere else (the state keeps
// its hash). ListTokens shows the caller's own tokens, an admin's `all`
// every user's; RevokeToken takes the caller's own, or any for an admin.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/messages_common.h"
#include "protocol/model/api_token.h"

namespace gpool {

struct CreateToken {
  static constexpr MessageType kType = MessageType::kCreateToken;
  TokenScope scope = TokenScope::kRead;
  int64_t ttl_ms = 0;  // 0: never expires; at most kMaxTokenTtlMs
  template <typename V>
  void Fields(V& v) {
    v.Optional("scope", scope);
    v.Optional("ttl_ms", ttl_ms);
  }
};

struct CreateTokenReply {
  static constexpr MessageType kType = MessageType::kCreateTokenReply;
  std::string token;  // "gpt_<64 hex>": shown once, kept nowhere
  ApiTokenInfo info;
  template <typename V>
  void Fields(V& v) {
    v.Required("token", token);
    v.Required("info", info);
  }
};

struct ListTokens {
  static constexpr MessageType kType = MessageType::kListTokens;
  bool all = false;  // every user's (admins only)
  template <typename V>
  void Fields(V& v) {
    v.Optional("all", all);
  }
};

struct ListTokensReply {
  static constexpr MessageType kType = MessageType::kListTokensReply;
  std::vector<ApiTokenInfo> tokens;
  template <typename V>
  void Fields(V& v) {
    v.Required("tokens", tokens);
  }
};

struct RevokeToken {
  static constexpr MessageType kType = MessageType::kRevokeToken;
  std::string id;
  template <typename V>
  void Fields(V& v) {
    v.Required("id", id);
  }
};

struct RevokeTokenReply {
  static constexpr MessageType kType = MessageType::kRevokeTokenReply;
  ApiTokenInfo info;  // as it was
  template <typename V>
  void Fields(V& v) {
    v.Required("info", info);
  }
};

}  // namespace gpool
