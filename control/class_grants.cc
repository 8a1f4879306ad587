#include "control/class_grants.h"

#include "protocol/model/users.h"
#include "protocol/types.h"

namespace gpool::control {
namespace {

bool ClassGrantHasRole(const UserSpec& user, Role role) {
  for (const auto& grant : user.roles) {
    if (grant.role == role) return true;
  }
  return false;
}

// Admins are not held to class grants (class_grants.h says why).
bool ClassGrantAdmin(const Actor& actor) {
  if (actor.kind == Actor::Kind::kInsecureAdmin) return true;
  return actor.kind == Actor::Kind::kUser && actor.user != nullptr && ClassGrantHasRole(*actor.user, Role::kAdmin);
}

}  // namespace

Status CheckSubmitClass(const Actor& actor, std::string_view priority_class, const std::string& queue,
                        const state::ClusterState& state) {
  if (ClassGrantAdmin(actor) || state.ClassGranted(queue, priority_class)) return Status::Ok();
  const std::string cls(priority_class);
  const std::string who = cls == "system" ? "an admin" : "an admin, or a queue-admin above it,";
  return Status::PermissionDenied("class " + cls + " is not granted to queue " + queue +
                                  " or its ancestors, so " + actor.name + " may not submit " + cls +
                                  " jobs there; " + who + " grants it: gpool queue grant-class " + queue + " " + cls);
}

Decision AuthorizeClassGrant(const Actor& actor, std::string_view priority_class, const std::string& queue,
                             const state::ClusterState& state) {
  const std::string missing = "grant class " + std::string(priority_class) + " on queue " + queue;
  if (ClassGrantAdmin(actor)) return {true, {}};
  if (actor.kind != Actor::Kind::kUser || actor.user == nullptr) return {false, missing};
  // A queue-admin grants high within what it administers, strictly below its
  // own queue; system is the cluster's to give (it outranks every queue).
  if (priority_class != "high") return {false, missing + " (only admins grant " + std::string(priority_class) + ")"};
  for (const auto& grant : actor.user->roles) {
    if (grant.role != Role::kQueueAdmin || queue == grant.queue) continue;
    if (state.QueueInSubtree(queue, grant.queue)) return {true, {}};
  }
  return {false, missing};
}

}  // namespace gpool::control
