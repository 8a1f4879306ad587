// AlertDriver: the leader's alert rules (issue 34), on the event and webhook
// pipeline the health policy uses.
//
// Every check_every_ms the serving leader evaluates three rules and proposes
// an AlertCmd for each verdict that differs from the committed set of firing
// alerts (ClusterState::alerts):
//   queue-wait        a job pending longer than queue_wait_ms (wall clock
//                     from its submission); the message carries its first
//                     pending reason. Resolved once it runs or ends.
//   quota             a queue holding at least quota_used_pct of its
//                     capability of a resource. Resolved below it.
//   low-utilisation   a running task whose GPUs (whole GPUs, as its node's
//                     NVML samples report them in heartbeats) were all below
//                     low_util_pct for low_util_ms. GPUs nobody measured
//                     (simulated nodes, no driver) never fire it. Resolved
//                     when it ends or its GPUs get busy.
// Apply emits "alert-firing" / "alert-resolved" events only on a change, so
// an alert is raised once and resolved once however often it is evaluated
// and whoever leads; webhook sinks deliver them like health events, and the
// dedupe_key (the alert's key) lets a receiver drop at-least-once repeats.
// A rule whose threshold is 0 is off.
//
// Thread-safety: the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "control/leader_service.h"
#include "control/ports.h"
#include "control/state/cluster_state.h"
#include "control/worker_table.h"
#include "protocol/base/clock.h"

namespace gpool::control {

struct AlertRules {
  int64_t check_every_ms = 5'000;
  int64_t queue_wait_ms = 30 * 60'000;   // 0: off
  uint32_t quota_used_pct = 90;          // 0: off
  uint32_t low_util_pct = 10;            // 0: off
  int64_t low_util_ms = 30 * 60'000;
  size_t max_changes_per_check = 100;    // a flood waits for the next check
};

class AlertDriver : public LeaderService {
 public:
  AlertDriver(const AlertRules& rules, const state::ClusterState& state, const WorkerTable& workers,
              Proposer& proposer, const Clock* clock)
      : rules_(rules), state_(state), workers_(workers), proposer_(proposer), clock_(clock) {}

  // Leader only. `now_ms` is monotonic.
  void Tick(int64_t now_ms) override;
  void Reset() override;

  // The alerts the rules want firing now (key -> command), for tests.
  std::map<std::string, state::AlertCmd> Evaluate(int64_t now_mono_ms);

 private:
  void QueueWait(int64_t now_wall_ms, std::map<std::string, state::AlertCmd>& want) const;
  void QuotaUse(std::map<std::string, state::AlertCmd>& want) const;
  void LowUtilisation(int64_t now_mono_ms, std::map<std::string, state::AlertCmd>& want);

  AlertRules rules_;
  const state::ClusterState& state_;
  const WorkerTable& workers_;
  Proposer& proposer_;
  const Clock* clock_;
  int64_t next_check_ms_ = 0;
  size_t in_flight_ = 0;
  uint64_t generation_ = 0;
  // Since when (monotonic) each running task's GPUs have all been idle. In
  // memory: a new leader starts counting afresh, which only delays an alert.
  std::map<TaskId, int64_t> idle_since_;
};

}  // namespace gpool::control
