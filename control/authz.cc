#include "control/authz.h"
#include "protocol/model/users.h"

#include <array>

namespace gpool::control {
namespace {

constexpr std::array<std::string_view, 19> kNames = {
    "read-cluster", "read-job",     "read-job-secrets", "submit",     "cancel-job",  "exec-job",  "manage-queue",
    "place-queue",  "manage-nodes", "report-probe", "manage-replicas",  "manage-users", "read-users", "read-audit", "bootstrap",
    "read-usage",   "manage-prices", "export-snapshot", "manage-tokens",
};
static_assert(kNames.size() == static_cast<size_t>(Permission::kManageTokens) + 1);

bool Has(const UserSpec& user, Role role) {
  for (const auto& grant : user.roles) {
    if (grant.role == role) return true;
  }
  return false;
}

// Some grant of `role` covers `queue` (it is the grant's queue or below it;
// `strictly`: below it only).
bool Covers(const UserSpec& user, Role role, std::string_view queue, const state::ClusterState& state,
            bool strictly = false) {
  if (queue.empty()) return false;
  for (const auto& grant : user.roles) {
    if (grant.role != role) continue;
    if (strictly && queue == grant.queue) continue;
    if (state.QueueInSubtree(queue, grant.queue)) return true;
  }
  return false;
}

bool UserMay(const UserSpec& user, Permission permission, const Target& target, const state::ClusterState& state) {
  if (Has(user, Role::kAdmin)) return true;
  const bool own = !target.owner.empty() && target.owner == user.name;
  const bool queue_admin = Covers(user, Role::kQueueAdmin, target.queue, state);
  const bool any_role = !user.roles.empty();
  switch (permission) {
    case Permission::kReadCluster: return any_role;
    case Permission::kReadJob:
      return own || queue_admin || Has(user, Role::kViewer) || Covers(user, Role::kMember, target.queue, state);
    case Permission::kReadJobSecrets:
    case Permission::kCancelJob:
    case Permission::kExecJob: return own || queue_admin;
    case Permission::kSubmit: return queue_admin || Covers(user, Role::kMember, target.queue, state);
    case Permission::kManageQueue: return Covers(user, Role::kQueueAdmin, target.queue, state, /*strictly=*/true);
    case Permission::kPlaceQueue: return queue_admin;
    // Members and viewers see their own usage; a queue-admin its subtree's.
    case Permission::kReadUsage: return own || queue_admin;
    // Anyone's own tokens (a token never grants more than its owner has).
    case Permission::kManageTokens: return own;
    case Permission::kManagePrices:
    case Permission::kExportSnapshot:
    case Permission::kManageNodes:
    case Permission::kReportProbe:
    case Permission::kManageReplicas:
    case Permission::kManageUsers:
    case Permission::kReadUsers:
    case Permission::kReadAudit:
    case Permission::kBootstrap: return false;
  }
  return false;
}

std::string Describe(Permission permission, const Target& target) {
  std::string text(PermissionName(permission));
  if (!target.queue.empty()) text += " on queue " + target.queue;
  if (!target.owner.empty()) text += " (a job of " + target.owner + ")";
  return text;
}

}  // namespace

std::string_view PermissionName(Permission permission) { return kNames[static_cast<size_t>(permission)]; }

Decision Authorize(const Actor& actor, Permission permission, const Target& target, const state::ClusterState& state) {
  bool allowed = false;
  switch (actor.kind) {
    case Actor::Kind::kInsecureAdmin: allowed = true; break;
    case Actor::Kind::kBootstrap:
      allowed = permission == Permission::kBootstrap && !state.HasAdmin();
      break;
    case Actor::Kind::kUser:
      allowed = actor.user != nullptr && UserMay(*actor.user, permission, target, state);
      break;
    case Actor::Kind::kJob:
      allowed = (permission == Permission::kExecJob || permission == Permission::kReadJob) && target.job != 0 &&
                target.job == actor.job;
      break;
    case Actor::Kind::kAnonymous: allowed = false; break;
  }
  if (allowed) return {true, {}};
  return {false, Describe(permission, target)};
}

bool MutatingRequest(MessageType type) {
  switch (type) {
    case MessageType::kSubmitJob:
    case MessageType::kCancelJob:
    case MessageType::kUpdateNode:
    case MessageType::kUpdateQueue:
    case MessageType::kReportProbe:
    case MessageType::kChangeReplicas:
    case MessageType::kUpdateUser:
    case MessageType::kUpdatePrices:
    // Issue 50: adding credit; its show shares the type, as enrolment's lists do.
    case MessageType::kCredit:
    case MessageType::kBootstrap:
    case MessageType::kExecStart:
    case MessageType::kExecSignal:
    case MessageType::kCreateToken:
    case MessageType::kRevokeToken:
    // Approving or rejecting a node, making or revoking a join token: who may
    // run work (issue 48). Its list operations share the type, so they need a
    // write token too, and a refused one is audited like the decisions.
    case MessageType::kEnrolment:
    // Not a write, but who copied the whole state out belongs in the audit.
    case MessageType::kExportSnapshot: return true;
    default: return false;
  }
}

}  // namespace gpool::control
