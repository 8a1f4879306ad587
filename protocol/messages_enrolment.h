// Node enrolment (client -> coordinator, port 7400; docs/operations.md 2.2).
//
// With `--worker-enrolment admission` (the default) a worker key the
// coordinator does not know may connect and register, but its node is only
// a pending enrolment: it takes no work until an admin approves it, or until
// the worker presents a join token. One request type carries every
// enrolment operation, so the family takes two message types.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/enum_names.h"
#include "protocol/base/sha256.h"
#include "protocol/message_type.h"

namespace gpool {

// What operators call a worker key: short enough to read aloud and compare
// with the worker's log line, long enough (64 bits) that a rogue key cannot
// be made to match a chosen one.
inline std::string KeyFingerprint(std::string_view z85_key) {
  return "SHA256:" + Sha256::Of(z85_key).substr(0, 16);
}

// op:
//   "list-pending"  the pending enrolments
//   "approve"       admit `node`'s pending key (`fingerprint` picks one when
//                   several keys claim the name): the key is bound to the name
//   "reject"        drop `node`'s pending key(s) (`fingerprint`: only that one)
//   "token-create"  mint a single-use join token valid `ttl_ms`, whose node
//                   gets `labels`; the reply carries it, once
//   "token-list"    the tokens (never their secrets)
//   "token-revoke"  revoke the token `token_id` names
enum class EnrolmentOp : uint8_t { kListPending, kApprove, kReject, kCreateToken, kListTokens, kRevokeToken };
template <>
struct EnumNames<EnrolmentOp> {
  static constexpr std::array<std::string_view, 6> kNames = {"list-pending", "approve",    "reject",
                                                             "token-create", "token-list", "token-revoke"};
};

// A worker key that registered a node and awaits an admin.
struct PendingEnrolment {
  std::string node;
  std::string fingerprint;  // KeyFingerprint(key)
  std::string key;          // the worker's CurveZMQ public key (Z85)
  std::string hostname;
  int64_t first_seen_ms = 0;
  int64_t last_seen_ms = 0;
  uint32_t gpus = 0;               // devices it claims
  std::string gpu_model;           // of its first GPU; "" for none
  uint64_t registrations = 0;      // attempts seen while pending
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Required("key", key);
    v.Optional("fingerprint", fingerprint);
    v.Optional("hostname", hostname);
    v.Optional("first_seen_ms", first_seen_ms);
    v.Optional("last_seen_ms", last_seen_ms);
    v.Optional("gpus", gpus);
    v.Optional("gpu_model", gpu_model);
    v.Optional("registrations", registrations);
  }
};

// A join token as state keeps it: its hash, never the token.
struct JoinTokenInfo {
  std::string id;    // the first 12 hex digits of the token's SHA-256: names it for list and revoke
  std::string hash;  // SHA-256 of the token, hex (not sent to clients: empty in replies)
  int64_t created_ms = 0;
  int64_t expires_ms = 0;
  std::string creator;
  std::map<std::string, std::string> labels;  // set on the node it admits
  std::string used_by;  // the node it admitted; "" while unused
  int64_t used_ms = 0;
  bool revoked = false;
  template <typename V>
  void Fields(V& v) {
    v.Required("id", id);
    v.Optional("hash", hash);
    v.Optional("created_ms", created_ms);
    v.Optional("expires_ms", expires_ms);
    v.Optional("creator", creator);
    v.Optional("labels", labels);
    v.Optional("used_by", used_by);
    v.Optional("used_ms", used_ms);
    v.Optional("revoked", revoked);
  }
};

struct Enrolment {
  static constexpr MessageType kType = MessageType::kEnrolment;
  EnrolmentOp op = EnrolmentOp::kListPending;  // by name on the wire
  std::string node;
  std::string fingerprint;
  uint64_t ttl_ms = 0;
  std::map<std::string, std::string> labels;
  std::string token_id;
  template <typename V>
  void Fields(V& v) {
    v.Required("op", op);
    v.Optional("node", node);
    v.Optional("fingerprint", fingerprint);
    v.Optional("ttl_ms", ttl_ms);
    v.Optional("labels", labels);
    v.Optional("token_id", token_id);
  }
};

struct EnrolmentReply {
  static constexpr MessageType kType = MessageType::kEnrolmentReply;
  std::vector<PendingEnrolment> pending;  // list-pending; approve/reject: the entries acted on
  std::vector<JoinTokenInfo> tokens;      // token-list; token-create/revoke: the token acted on
  std::string token;                      // token-create only: the secret, shown once
  template <typename V>
  void Fields(V& v) {
    v.Optional("pending", pending);
    v.Optional("tokens", tokens);
    v.Optional("token", token);
  }
};

}  // namespace gpool
