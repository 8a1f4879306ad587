// API tokens (issue 48, finding 8): the HTTP port's credential. A user's
// CurveZMQ secret key is their identity on every port, so it never travels
// over HTTP; a token is made for one purpose (its scope), can expire, and
// is revoked alone. The replicated state keeps only the token's SHA-256,
// so neither the Raft log nor a snapshot holds a usable credential.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/base/enum_names.h"

namespace gpool {

// What a token opens, each including the one before; the owner's roles
// still decide every request (a token never grants more than its owner has).
//   metrics  GET /metrics only
//   read     + the JSON API's reads and the dashboard
//   write    + the JSON API's mutations
enum class TokenScope : uint8_t { kMetrics, kRead, kWrite };
template <>
struct EnumNames<TokenScope> {
  static constexpr std::array<std::string_view, 3> kNames = {"metrics", "read", "write"};
};

// On the log by name (TokenCmd): create | revoke.
enum class TokenOp : uint8_t { kCreate, kRevoke };
template <>
struct EnumNames<TokenOp> {
  static constexpr std::array<std::string_view, 2> kNames = {"create", "revoke"};
};

// Every token starts with this, so a log line, a secret scanner or the
// coordinator can tell a token from a secret key (40 Z85 characters).
inline constexpr std::string_view kApiTokenPrefix = "gpt_";
// Random bytes in a token (then hex): 256 bits, past any guessing.
inline constexpr size_t kApiTokenRandomBytes = 32;
// Tokens one user may hold at once (revoked ones do not count).
inline constexpr size_t kMaxTokensPerUser = 64;
// Longest --ttl (a year): a forgotten token must still end.
inline constexpr int64_t kMaxTokenTtlMs = 366LL * 24 * 3600 * 1000;

// A token as the state keeps and `gpool token list` shows it: never the
// token itself.
struct ApiTokenInfo {
  std::string id;      // "tok-<hex>", what `gpool token revoke` takes
  std::string owner;   // the user it speaks for ("admin": the --admin-key's)
  TokenScope scope = TokenScope::kRead;
  int64_t created_ms = 0;
  int64_t expires_ms = 0;    // 0: never
  int64_t last_used_ms = 0;  // as the serving replica last saw it (leader-local, not replicated); 0: never
  std::string hash;          // SHA-256 of the token, hex (replicated; empty in replies)
  // Made by the --admin-key's holder, who is no user record: it speaks for
  // the configured admin, and only while that same key (its public half,
  // admin_key) is still the configured one.
  bool configured_admin = false;
  std::string admin_key;
  template <typename V>
  void Fields(V& v) {
    v.Required("id", id);
    v.Required("owner", owner);
    v.Required("scope", scope);
    v.Optional("created_ms", created_ms);
    v.Optional("expires_ms", expires_ms);
    v.Optional("last_used_ms", last_used_ms);
    v.Optional("hash", hash);
    v.Optional("configured_admin", configured_admin);
    v.Optional("admin_key", admin_key);
  }
};

}  // namespace gpool
