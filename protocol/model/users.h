// Users, their role grants and the audit trail, as the coordinator's state
// and its replicated log keep them (UpdateUserCmd, BootstrapCmd, AuditCmd).
// UpdateUser travels as it is on the client API (messages_users.h).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/enum_names.h"
#include "protocol/message_type.h"

namespace gpool {

// On the wire by name: admin | queue-admin | member | viewer.
enum class Role : uint8_t { kAdmin, kQueueAdmin, kMember, kViewer };
template <>
struct EnumNames<Role> {
  static constexpr std::array<std::string_view, 4> kNames = {"admin", "queue-admin", "member", "viewer"};
};

// On the wire by name: create | update | delete | add-key | remove-key | grant | revoke | rotate-key.
enum class UserOp : uint8_t { kCreate, kUpdate, kDelete, kAddKey, kRemoveKey, kGrant, kRevoke, kRotateKey };
template <>
struct EnumNames<UserOp> {
  static constexpr std::array<std::string_view, 8> kNames = {"create", "update", "delete", "add-key", "remove-key",
                                                             "grant",  "revoke", "rotate-key"};
};

struct RoleGrant {
  Role role = Role::kViewer;
  std::string queue;  // queue-admin and member: the queue; admin and viewer: ""
  bool operator==(const RoleGrant&) const = default;
  template <typename V>
  void Fields(V& v) {
    v.Required("role", role);
    v.Optional("queue", queue);
  }
};

struct UserSpec {
  std::string name;
  std::vector<std::string> keys;  // CurveZMQ public keys, Z85 (40 characters)
  int64_t uid = -1;               // tasks run as this uid/gid; -1: the worker's --task-user
  int64_t gid = -1;
  std::vector<RoleGrant> roles;
  // Keys in retirement (issue 48, `gpool admin user rotate-key`): key ->
  // wall ms from which it is refused (the rotating command's time plus its
  // grace). Each is still in `keys` until a later update of the user drops
  // it; past its deadline the handshake and the gateway refuse it already.
  std::map<std::string, int64_t> key_expiry;
  // Whether `key` is one of this user's and not past its retirement at wall time now_ms.
  bool KeyValid(const std::string& key, int64_t now_ms) const {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) return false;
    auto it = key_expiry.find(key);
    return it == key_expiry.end() || now_ms < it->second;
  }
  template <typename V>
  void Fields(V& v) {
    v.Required("name", name);
    v.Optional("keys", keys);
    v.Optional("uid", uid);
    v.Optional("gid", gid);
    v.Optional("roles", roles);
    v.Optional("key_expiry", key_expiry);
  }
};

// op: create | update (uid, gid) | delete | add-key | remove-key (spec.keys)
//     | grant | revoke (spec.roles)
//     | rotate-key: adds spec.keys and retires `retire_keys` (the user's)
//       grace_ms after the command's time (the proposer's clock, so every
//       replica agrees); grace 0 removes them at once
struct UpdateUser {
  static constexpr MessageType kType = MessageType::kUpdateUser;
  UserOp op = UserOp::kCreate;
  UserSpec spec;
  std::vector<std::string> retire_keys;
  uint64_t grace_ms = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("op", op);
    v.Required("spec", spec);
    v.Optional("retire_keys", retire_keys);
    v.Optional("grace_ms", grace_ms);
  }
};

// One mutating request as the gateway decided it.
struct AuditEntry {
  uint64_t seq = 0;
  int64_t time_ms = 0;
  std::string user;     // who: a user name, "insecure", or "bootstrap"
  std::string request;  // the message type (SubmitJob, CancelJob, UpdateUser...)
  std::string target;   // what: "job 12", "queue ml", "node gpu-3", "user bob"
  bool allowed = false;
  std::string reason;   // denied: the missing permission; failed: the error's message; otherwise ""
  // What became of the request (issue 48, finding 9: a replica change that
  // failed was recorded only as "allowed"): "denied"; "requested" (allowed,
  // written before the mutation is proposed, so nothing is applied
  // unrecorded), then a second entry "succeeded" or "failed" with `code`
  // (a StatusCode name) once the outcome is known. "" in entries written
  // before outcomes were recorded.
  std::string outcome;
  std::string code;
  template <typename V>
  void Fields(V& v) {
    v.Required("seq", seq);
    v.Required("time_ms", time_ms);
    v.Required("user", user);
    v.Required("request", request);
    v.Optional("target", target);
    v.Required("allowed", allowed);
    v.Optional("reason", reason);
    v.Optional("outcome", outcome);
    v.Optional("code", code);
  }
};

}  // namespace gpool
