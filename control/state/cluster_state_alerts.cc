// Alerts (control/alert_driver.h): the set of firing alerts, and the events
// a change of it emits. Deduplication lives here, in the replicated state,
// so a repeat or a new leader's re-evaluation emits nothing.
#include "control/state/cluster_state.h"
#include "protocol/event.h"

namespace gpool::state {

ApplyResult ClusterState::ApplyAlert(int64_t now, const AlertCmd& cmd) {
  ApplyResult result;
  if (cmd.key.empty()) {
    result.status = Status::InvalidArgument("an alert needs a key");
    return result;
  }
  const auto it = alerts_.find(cmd.key);
  const bool was_firing = it != alerts_.end();
  if (cmd.firing == was_firing) return result;  // nothing changed
  ClusterEvent event;
  event.node = cmd.node;
  event.job = cmd.job;
  event.severity = cmd.severity;
  event.reason = cmd.rule;
  event.actor = "alerts";
  event.dedupe_key = cmd.key;
  if (cmd.firing) {
    alerts_[cmd.key] = cmd;
    event.message = cmd.message;
    Emit(now, EventKind::kAlertFiring, std::move(event));
  } else {
    event.severity = it->second.severity;
    event.reason = it->second.rule;
    event.node = it->second.node;
    event.job = it->second.job;
    event.message = "resolved: " + (cmd.message.empty() ? it->second.message : cmd.message);
    alerts_.erase(it);
    Emit(now, EventKind::kAlertResolved, std::move(event));
  }
  return result;
}

}  // namespace gpool::state
