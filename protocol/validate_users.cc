#include "protocol/validate_users.h"

#include <algorithm>
#include <set>

#include "protocol/validate.h"

namespace gpool {
namespace {

constexpr std::string_view kZ85Alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
constexpr int64_t kNobodyUid = 65534;
constexpr int64_t kMaxUnixId = 4'294'967'294;  // (uid_t)-1 means "no change" to the kernel

bool RoleOverQueue(Role role) { return role == Role::kQueueAdmin || role == Role::kMember; }

}  // namespace

bool IsZ85Key(std::string_view key) {
  return key.size() == kZ85KeyLength &&
         std::all_of(key.begin(), key.end(), [](char c) { return kZ85Alphabet.find(c) != std::string_view::npos; });
}

bool IsRoleName(std::string_view role) { return EnumFromName<Role>(role).has_value(); }

Status ValidateUserSpec(const UserSpec& spec) {
  if (spec.name.empty() || spec.name.size() > kMaxUserNameLength ||
      !std::all_of(spec.name.begin(), spec.name.end(), IsNameChar)) {
    return Status::InvalidArgument("name: '" + spec.name.substr(0, 64) +
                                   "' is not a user name (1 to 64 of A-Z a-z 0-9 . _ -)");
  }
  if (spec.keys.size() > kMaxKeysPerUser) {
    return Status::InvalidArgument("keys: at most " + std::to_string(kMaxKeysPerUser) + " per user");
  }
  std::set<std::string> seen;
  for (const auto& key : spec.keys) {
    if (!IsZ85Key(key)) {
      return Status::InvalidArgument("keys: '" + key.substr(0, 48) +
                                     "' is not a CurveZMQ public key (40 Z85 characters, a .pub file of "
                                     "`gpool admin keygen`)");
    }
    if (!seen.insert(key).second) return Status::InvalidArgument("keys: " + key + " is listed twice");
  }
  for (int64_t id : {spec.uid, spec.gid}) {
    if (id < -1 || id > kMaxUnixId) {
      return Status::InvalidArgument("uid/gid: " + std::to_string(id) + " is not a Unix id (or -1 for none)");
    }
  }
  // Issue 48: nobody is every unprivileged daemon's uid; a task owner as
  // nobody could read (and be read by) all of them.
  if (spec.uid == kNobodyUid) {
    return Status::InvalidArgument("uid: 65534 is nobody, shared by daemons; it is never a task owner (leave "
                                   "--uid out to be given a uid of the coordinators' --uid-range)");
  }
  if (spec.roles.size() > kMaxRolesPerUser) {
    return Status::InvalidArgument("roles: at most " + std::to_string(kMaxRolesPerUser) + " grants per user");
  }
  // Each grant's role is one Role names: decoding refused any other.
  for (const auto& grant : spec.roles) {
    const std::string role(NameOf(grant.role));
    if (RoleOverQueue(grant.role) && grant.queue.empty()) {
      return Status::InvalidArgument("roles: " + role + " is granted over a queue (--queue)");
    }
    if (!RoleOverQueue(grant.role) && !grant.queue.empty()) {
      return Status::InvalidArgument("roles: " + role + " is cluster-wide; it takes no queue");
    }
  }
  return Status::Ok();
}

Status ValidateUpdateUser(const UpdateUser& update) {
  // The op is one UserOp names: decoding refused any other.
  GPOOL_RETURN_IF_ERROR(ValidateUserSpec(update.spec));
  const std::string op(NameOf(update.op));
  if (!update.spec.key_expiry.empty()) {
    return Status::InvalidArgument("key_expiry: set by the coordinator from rotate-key's grace, not sent");
  }
  if ((update.op == UserOp::kAddKey || update.op == UserOp::kRemoveKey) && update.spec.keys.empty()) {
    return Status::InvalidArgument(op + ": name the key (--key FILE)");
  }
  if (update.op == UserOp::kRotateKey) {
    if (update.spec.keys.empty()) return Status::InvalidArgument(op + ": name the new key (--key FILE)");
    if (update.retire_keys.empty()) return Status::InvalidArgument(op + ": name the key it replaces (--retire FILE)");
    if (update.retire_keys.size() > kMaxKeysPerUser) {
      return Status::InvalidArgument("retire_keys: at most " + std::to_string(kMaxKeysPerUser));
    }
    for (const auto& key : update.retire_keys) {
      if (!IsZ85Key(key)) return Status::InvalidArgument("retire_keys: '" + key.substr(0, 48) + "' is not a public key");
      if (std::find(update.spec.keys.begin(), update.spec.keys.end(), key) != update.spec.keys.end()) {
        return Status::InvalidArgument(op + ": key " + key + " is both added and retired");
      }
    }
    // A month at most, as for a node's key: a typo must not keep a retired key for years.
    constexpr uint64_t kMaxKeyGraceMs = 30ull * 24 * 3600 * 1000;
    if (update.grace_ms > kMaxKeyGraceMs) return Status::InvalidArgument("grace_ms: at most 30 days");
  } else if (!update.retire_keys.empty() || update.grace_ms != 0) {
    return Status::InvalidArgument(op + ": only rotate-key retires keys with a grace");
  }
  if ((update.op == UserOp::kGrant || update.op == UserOp::kRevoke) && update.spec.roles.empty()) {
    return Status::InvalidArgument(op + ": name the role");
  }
  return Status::Ok();
}

}  // namespace gpool
