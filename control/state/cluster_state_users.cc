// ClusterState: users, role grants and the audit stream (issue 31). The
// gateway decides who may do what (control/authz.h); apply keeps the records
// consistent whatever reached the log: names unique, a key names one user, a
// grant's queue exists, and a bootstrap makes an admin only once. Issue 48:
// a uid names one user, and a user given none gets a free one of the range
// its command carries (AssignUid).
#include <algorithm>
#include <set>

#include "control/state/cluster_state.h"
#include "protocol/model/users.h"

namespace gpool::state {

const UserSpec* ClusterState::FindUser(std::string_view name) const {
  auto it = users_.find(std::string(name));
  return it == users_.end() ? nullptr : &it->second;
}

namespace {

bool AnyAdmin(const std::map<std::string, UserSpec>& users) {
  for (const auto& [name, user] : users) {
    for (const auto& grant : user.roles) {
      if (grant.role == Role::kAdmin) return true;
    }
  }
  return false;
}

}  // namespace

bool ClusterState::HasAdmin() const { return AnyAdmin(users_); }

bool ClusterState::QueueInSubtree(std::string_view queue, std::string_view root) const {
  std::string at(queue);
  // The tree is acyclic (CheckQueueAgainstTree); the bound guards a corrupt one.
  for (size_t depth = 0; depth <= queues_.size() && !at.empty(); ++depth) {
    if (at == root) return true;
    auto it = queues_.find(at);
    if (it == queues_.end() || it->second.spec.name == "root") return false;
    at = it->second.spec.parent;
  }
  return false;
}

Status ClusterState::CheckUserAgainstState(const UserSpec& spec) const {
  for (const auto& key : spec.keys) {
    for (const auto& [name, user] : users_) {
      if (name != spec.name && std::find(user.keys.begin(), user.keys.end(), key) != user.keys.end()) {
        return Status::AlreadyExists("keys: " + key + " already belongs to user " + name);
      }
    }
  }
  for (const auto& grant : spec.roles) {
    if (!grant.queue.empty() && FindQueue(grant.queue) == nullptr) {
      return Status::NotFound("roles: queue '" + grant.queue + "' does not exist (`gpool queue tree` lists them)");
    }
  }
  return Status::Ok();
}

Status ClusterState::AssignUid(UserSpec& spec, uint32_t first, uint32_t last) const {
  // An entry from before issue 48 carries no range: it replays as it applied
  // then (duplicate uids and all), so replicas replaying it agree with those
  // that applied it under the old rules.
  if (last == 0) return Status::Ok();
  if (spec.uid >= 0) {
    // Two users with one uid would read each other's task files on every worker.
    for (const auto& [name, user] : users_) {
      if (name != spec.name && user.uid == spec.uid) {
        return Status::AlreadyExists("uid " + std::to_string(spec.uid) + " already belongs to user " + name +
                                     " (leave --uid out to be given a free one)");
      }
    }
    return Status::Ok();
  }
  std::set<int64_t> held;
  for (const auto& [name, user] : users_) {
    if (name != spec.name && user.uid >= first && user.uid <= last) held.insert(user.uid);
  }
  // The lowest free one: the same on every replica, whatever order users came in.
  int64_t uid = first;
  for (int64_t h : held) {
    if (h != uid) break;
    ++uid;
  }
  if (uid > static_cast<int64_t>(last)) {
    return Status::ResourceExhausted("no free uid for user " + spec.name + ": all " +
                                     std::to_string(uint64_t{last} - first + 1) + " uids of the range " +
                                     std::to_string(first) + "-" + std::to_string(last) +
                                     " are held; widen the coordinators' --uid-range or pass --uid");
  }
  spec.uid = uid;
  if (spec.gid < 0) spec.gid = uid;
  return Status::Ok();
}

Result<UserSpec> ClusterState::UserAfterUpdate(const UpdateUser& update, int64_t now) const {
  const std::string& name = update.spec.name;
  auto it = users_.find(name);
  if (update.op == UserOp::kCreate) {
    if (it != users_.end()) return Status::AlreadyExists("user " + name + " exists");
    return update.spec;
  }
  if (it == users_.end()) return Status::NotFound("user " + name + " does not exist (`gpool admin user list`)");
  UserSpec next = it->second;
  switch (update.op) {
    case UserOp::kUpdate:
      next.uid = update.spec.uid;
      next.gid = update.spec.gid;
      break;
    case UserOp::kAddKey:
      for (const auto& key : update.spec.keys) {
        if (std::find(next.keys.begin(), next.keys.end(), key) == next.keys.end()) next.keys.push_back(key);
      }
      break;
    case UserOp::kRemoveKey:
      for (const auto& key : update.spec.keys) std::erase(next.keys, key);
      break;
    case UserOp::kRotateKey:
      // The new key works at once; the old one until the deadline (or, with
      // no grace, not at all: a swap in one entry).
      for (const auto& key : update.retire_keys) {
        if (std::find(next.keys.begin(), next.keys.end(), key) == next.keys.end()) {
          return Status::NotFound("key " + key + " is not user " + name + "'s (`gpool admin user show " + name + "`)");
        }
        if (update.grace_ms == 0) {
          std::erase(next.keys, key);
        } else {
          next.key_expiry[key] = now + static_cast<int64_t>(update.grace_ms);
        }
      }
      for (const auto& key : update.spec.keys) {
        if (std::find(next.keys.begin(), next.keys.end(), key) == next.keys.end()) next.keys.push_back(key);
        next.key_expiry.erase(key);  // a key rotated back in is not retiring
      }
      break;
    case UserOp::kGrant:
      for (const auto& grant : update.spec.roles) {
        if (std::find(next.roles.begin(), next.roles.end(), grant) == next.roles.end()) next.roles.push_back(grant);
      }
      break;
    case UserOp::kRevoke:
      for (const auto& grant : update.spec.roles) std::erase(next.roles, grant);
      break;
    case UserOp::kCreate:  // handled above
    case UserOp::kDelete:
      break;
  }
  // Lazily: a retired key past its deadline (refused already by the clock)
  // leaves the record with the user's next change, and so does the expiry
  // of a key no longer held.
  std::erase_if(next.keys, [&](const std::string& key) {
    auto expiry = next.key_expiry.find(key);
    return expiry != next.key_expiry.end() && now >= expiry->second;
  });
  std::erase_if(next.key_expiry, [&](const auto& entry) {
    return std::find(next.keys.begin(), next.keys.end(), entry.first) == next.keys.end();
  });
  return next;
}

// Apply re-checks what the state must hold whatever reached the log (a user
// exists to be changed, a key names one user, a grant's queue exists, the
// last admin stays), never the request rules of the build replaying it:
// those (name syntax, key format, how many keys and grants) are the
// gateway's (validate_users.h), so an old log replays to the same state
// under newer rules.
ApplyResult ClusterState::ApplyUpdateUser(int64_t now, const UpdateUserCmd& cmd) {
  const UpdateUser& update = cmd.update;
  const std::string& name = update.spec.name;
  auto next = UserAfterUpdate(update, now);
  if (!next.ok()) return {next.status()};
  // `gpool admin user update NAME` without --uid (uid -1) keeps the uid the
  // user has, or gives one to a user from before issue 48.
  if (update.op == UserOp::kUpdate && next->uid < 0 && cmd.uid_last != 0) {
    const UserSpec& now = users_.at(name);
    next->uid = now.uid;
    if (next->gid < 0) next->gid = now.gid;
  }
  if (update.op == UserOp::kCreate || update.op == UserOp::kUpdate) {
    if (Status given = AssignUid(*next, cmd.uid_first, cmd.uid_last); !given.ok()) return {given};
  }
  if (update.op == UserOp::kCreate) {
    if (Status fits = CheckUserAgainstState(*next); !fits.ok()) return {fits};
    users_.emplace(name, std::move(next).value());
    return {};
  }
  if (update.op != UserOp::kDelete) {
    if (Status fits = CheckUserAgainstState(*next); !fits.ok()) return {fits};
  }
  // Without an admin nobody could manage users again (bootstrap opens only
  // on a cluster that never had one), so the last one stays.
  auto after = users_;  // a few thousand records at most: copying is cheaper than reasoning
  if (update.op == UserOp::kDelete) {
    after.erase(name);
  } else {
    after[name] = std::move(next).value();
  }
  if (AnyAdmin(users_) && !AnyAdmin(after)) {
    return {Status::FailedPrecondition("user " + name + " is the last admin; grant admin to another user first")};
  }
  users_ = std::move(after);
  // A removed user's tokens go with them, on every replica at once: a
  // token never outlives its owner's record.
  if (update.op == UserOp::kDelete) api_tokens_.RevokeOwner(name);
  return {};
}

ApplyResult ClusterState::ApplyBootstrap(const BootstrapCmd& cmd) {
  if (HasAdmin()) return {Status::FailedPrecondition("the cluster already has an admin (bootstrap runs once)")};
  if (cmd.admin.name.empty()) return {Status::InvalidArgument("bootstrap names no admin")};
  UserSpec admin = cmd.admin;
  if (Status given = AssignUid(admin, cmd.uid_first, cmd.uid_last); !given.ok()) return {given};
  if (Status fits = CheckUserAgainstState(admin); !fits.ok()) return {fits};
  if (std::none_of(admin.roles.begin(), admin.roles.end(), [](const RoleGrant& g) { return g.role == Role::kAdmin; })) {
    admin.roles.push_back(RoleGrant{Role::kAdmin, ""});
  }
  users_[admin.name] = std::move(admin);
  return {};
}

ApplyResult ClusterState::ApplyAudit(int64_t now, const AuditCmd& cmd) {
  for (const auto& entry : cmd.entries) {
    AuditEntry kept = entry;
    kept.seq = next_audit_seq_++;
    kept.time_ms = now;
    audit_.push_back(std::move(kept));
    if (audit_.size() > kMaxAudit) audit_.pop_front();
  }
  return {};
}

// An API token made or revoked (api_tokens.h). The owner must still be a
// user (or the configured admin) when the token is made: a token racing its
// owner's removal is refused here rather than left behind.
ApplyResult ClusterState::ApplyToken(int64_t now, const TokenCmd& cmd) {
  if (cmd.op == TokenOp::kRevoke) {
    auto was = api_tokens_.Revoke(cmd.token.id);
    return {was.status()};
  }
  if (!cmd.token.configured_admin && FindUser(cmd.token.owner) == nullptr) {
    return {Status::NotFound("user " + cmd.token.owner + " does not exist")};
  }
  return {api_tokens_.Create(now, cmd.token)};
}

}  // namespace gpool::state
