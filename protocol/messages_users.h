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
#include "protocol/model/users.h"

namespace gpool {

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
