#include "protocol/validate_users.h"

#include <algorithm>
#include <set>

#include "protocol/validate.h"

namespace gpool {
namespace {

constexpr std::string_view kZ85Alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
constexpr int64_t kMaxUnixId = 4'294'967'294;  // (uid_t)-1 means "no change" to the kernel

bool RoleOverQueue(std::string_view role) { return role == "queue-admin" || role == "member"; }

}  // namespace

bool IsZ85Key(std::string_view key) {
  return key.size() == kZ85KeyLength &&
         std::all_of(key.begin(), key.end(), [](char c) { return kZ85Alphabet.find(c) != std::string_view::npos; });
}

bool IsRoleName(std::string_view role) {
  return role == "admin" || role == "queue-admin" || role == "member" || role == "viewer";
}

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
  if (spec.roles.size() > kMaxRolesPerUser) {
    return Status::InvalidArgument("roles: at most " + std::to_string(kMaxRolesPerUser) + " grants per user");
  }
  for (const auto& grant : spec.roles) {
    if (!IsRoleName(grant.role)) {
      return Status::InvalidArgument("roles: '" + grant.role.substr(0, 32) +
                                     "' is not a role (admin, queue-admin, member, viewer)");
    }
    if (RoleOverQueue(grant.role) && grant.queue.empty()) {
      return Status::InvalidArgument("roles: " + grant.role + " is granted over a queue (--queue)");
    }
    if (!RoleOverQueue(grant.role) && !grant.queue.empty()) {
      return Status::InvalidArgument("roles: " + grant.role + " is cluster-wide; it takes no queue");
    }
  }
  return Status::Ok();
}

Status ValidateUpdateUser(const UpdateUser& update) {
  static const std::set<std::string> kOps = {"create", "update", "delete", "add-key", "remove-key", "grant", "revoke"};
  if (!kOps.count(update.op)) {
    return Status::InvalidArgument("op: '" + update.op.substr(0, 32) +
                                   "' is not one of create, update, delete, add-key, remove-key, grant, revoke");
  }
  GPOOL_RETURN_IF_ERROR(ValidateUserSpec(update.spec));
  if ((update.op == "add-key" || update.op == "remove-key") && update.spec.keys.empty()) {
    return Status::InvalidArgument(update.op + ": name the key (--key FILE)");
  }
  if ((update.op == "grant" || update.op == "revoke") && update.spec.roles.empty()) {
    return Status::InvalidArgument(update.op + ": name the role");
  }
  return Status::Ok();
}

}  // namespace gpool
