// Users, roles and the audit stream (client -> coordinator, port 7400).
//
// A user is who a CurveZMQ client key authenticates as (control/principal.h):
// a name, the public keys it may connect with, the Unix identity its tasks
// run as, and role grants. Roles:
//   admin                  everything
//   queue-admin  (queue)   the queue's subtree: its queues, quotas and jobs
//   member       (queue)   submit to the queue and its subtree; see and cancel
//                          own jobs; see others' jobs there without env or logs
//   viewer                 read-only: cluster, nodes, queues, jobs (no env, no logs)
// Everyone sees and cancels their own jobs, with env and logs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/messages_common.h"

namespace gpool {

// On the wire by name: admin | queue-admin | member | viewer.
enum class Role : uint8_t { kAdmin, kQueueAdmin, kMember, kViewer };
template <>
struct EnumNames<Role> {
  static constexpr std::array<std::string_view, 4> kNames = {"admin", "queue-admin", "member", "viewer"};
};

// On the wire by name: create | update | delete | add-key | remove-key | grant | revoke.
enum class UserOp : uint8_t { kCreate, kUpdate, kDelete, kAddKey, kRemoveKey, kGrant, kRevoke };
template <>
struct EnumNames<UserOp> {
  static constexpr std::array<std::string_view, 7> kNames = {"create",     "update", "delete", "add-key",
                                                             "remove-key", "grant",  "revoke"};
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
  template <typename V>
  void Fields(V& v) {
    v.Required("name", name);
    v.Optional("keys", keys);
    v.Optional("uid", uid);
    v.Optional("gid", gid);
    v.Optional("roles", roles);
  }
};

// op: create | update (uid, gid) | delete | add-key | remove-key (spec.keys)
//     | grant | revoke (spec.roles)
struct UpdateUser {
  static constexpr MessageType kType = MessageType::kUpdateUser;
  UserOp op = UserOp::kCreate;
  UserSpec spec;
  template <typename V>
  void Fields(V& v) {
    v.Required("op", op);
    v.Required("spec", spec);
  }
};

struct UpdateUserReply {
  static constexpr MessageType kType = MessageType::kUpdateUserReply;
  UserSpec user;  // as it is now (delete: as it was)
  template <typename V>
  void Fields(V& v) {
    v.Required("user", user);
  }
};

struct ListUsers {
  static constexpr MessageType kType = MessageType::kListUsers;
  template <typename V>
  void Fields(V&) {}
};

struct ListUsersReply {
  static constexpr MessageType kType = MessageType::kListUsersReply;
  std::vector<UserSpec> users;
  template <typename V>
  void Fields(V& v) {
    v.Required("users", users);
  }
};

// Creates the first admin (the caller's key becomes theirs), once: refused
// with FailedPrecondition when any admin exists.
struct Bootstrap {
  static constexpr MessageType kType = MessageType::kBootstrap;
  UserSpec admin;  // name, uid, gid; keys and roles are set by the coordinator
  template <typename V>
  void Fields(V& v) {
    v.Required("admin", admin);
  }
};

// Who the caller is authenticated as (any authenticated caller).
struct WhoAmI {
  static constexpr MessageType kType = MessageType::kWhoAmI;
  template <typename V>
  void Fields(V&) {}
};

struct WhoAmIReply {
  static constexpr MessageType kType = MessageType::kWhoAmIReply;
  std::string kind;  // user | job | bootstrap | insecure
  UserSpec user;     // kind user: the record (its keys included); kind job: name "job-<id>" only
  template <typename V>
  void Fields(V& v) {
    v.Required("kind", kind);
    v.Optional("user", user);
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
  std::string reason;   // refused: the missing permission; allowed: ""
  template <typename V>
  void Fields(V& v) {
    v.Required("seq", seq);
    v.Required("time_ms", time_ms);
    v.Required("user", user);
    v.Required("request", request);
    v.Optional("target", target);
    v.Required("allowed", allowed);
    v.Optional("reason", reason);
  }
};

struct ListAudit {
  static constexpr MessageType kType = MessageType::kListAudit;
  uint64_t after_seq = 0;
  uint32_t limit = 100;
  template <typename V>
  void Fields(V& v) {
    v.Optional("after_seq", after_seq);
    v.Optional("limit", limit);
  }
};

struct ListAuditReply {
  static constexpr MessageType kType = MessageType::kListAuditReply;
  std::vector<AuditEntry> entries;
  uint64_t last_seq = 0;        // continue after this
  uint64_t first_kept_seq = 0;  // older entries were dropped (the stream is bounded)
  template <typename V>
  void Fields(V& v) {
    v.Required("entries", entries);
    v.Optional("last_seq", last_seq);
    v.Optional("first_kept_seq", first_kept_seq);
  }
};

}  // namespace gpool
