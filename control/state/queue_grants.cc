// ClusterState: which priority classes a queue's jobs may use (issue 50).
// Low and medium are every queue's; high and system are opened per queue by
// UpdateQueue grant-class, and a grant covers the queue's whole subtree.
// Who may grant is the gateway's rule (control/class_grants.h); apply only
// keeps the set, so a log replays the same whoever asked.
#include <algorithm>

#include "control/state/cluster_state.h"
#include "protocol/model/queue_update.h"

namespace gpool::state {
namespace {

// Whether `priority_class` is one a queue must be granted ("" is medium).
bool ClassNeedsGrant(std::string_view priority_class) {
  const auto parsed = PriorityClassFromString(priority_class);
  return parsed && *parsed >= PriorityClass::kHigh;
}

}  // namespace

std::string ClusterState::ClassGrantedBy(const std::string& queue, std::string_view priority_class) const {
  if (!ClassNeedsGrant(priority_class)) return "";
  // Up the tree; a parent chain longer than the tree is a corrupt one.
  std::string at = queue;
  for (size_t steps = 0; !at.empty() && steps <= queues_.size(); ++steps) {
    const QueueRecord* record = FindQueue(at);
    if (record == nullptr) break;
    const auto& granted = record->granted_classes;
    if (std::find(granted.begin(), granted.end(), priority_class) != granted.end()) return at;
    at = at == "root" ? std::string() : record->spec.parent;
  }
  return "";
}

bool ClusterState::ClassGranted(const std::string& queue, std::string_view priority_class) const {
  return !ClassNeedsGrant(priority_class) || !ClassGrantedBy(queue, priority_class).empty();
}

ApplyResult ClusterState::ApplyClassGrant(const UpdateQueue& update) {
  ApplyResult result;
  const std::string& name = update.spec.name;
  // The edge refuses these first (ValidateUpdateQueue); apply checks again
  // so nothing but a class that needs a grant is ever stored.
  if (!ClassNeedsGrant(update.priority_class)) {
    result.status = Status::InvalidArgument("class: '" + update.priority_class +
                                            "' is not granted per queue (high or system are; low and medium are "
                                            "open to every queue)");
    return result;
  }
  auto it = queues_.find(name);
  if (it == queues_.end()) {
    result.status = Status::NotFound("queue '" + name + "' does not exist");
    return result;
  }
  auto& granted = it->second.granted_classes;
  auto at = std::lower_bound(granted.begin(), granted.end(), update.priority_class);
  const bool held = at != granted.end() && *at == update.priority_class;
  // Both set a state, so a re-sent request (client.h) changes nothing more.
  if (update.op == QueueOp::kGrantClass && !held) granted.insert(at, update.priority_class);
  if (update.op == QueueOp::kRevokeClass && held) granted.erase(at);
  return result;
}

}  // namespace gpool::state
