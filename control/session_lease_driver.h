// SessionLeaseDriver: the leader's side of rGPU session leases (issue 33).
//
// A session's owner renews it (RenewSession) while it uses it; one not
// renewed for its lease (SessionSpec::LeaseMs, by the leader's wall clock
// against the renewal the log recorded) is closed: the driver proposes a
// CancelJobCmd with the reason, which the session then shows as Expired.
// Once a second; at most one proposal in flight per session; Reset
// (leadership changed) forgets them, since a new leader's callbacks are fresh.
//
// Thread-safety: the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <set>

#include "control/leader_service.h"
#include "control/ports.h"
#include "control/state/cluster_state.h"
#include "protocol/base/clock.h"

namespace gpool::control {

class SessionLeaseDriver : public LeaderService {
 public:
  SessionLeaseDriver(const state::ClusterState& state, Proposer& proposer, const Clock* clock, uint32_t grace_ms)
      : state_(state), proposer_(proposer), clock_(clock), grace_ms_(grace_ms) {}

  // Leader only. `now_ms` is monotonic.
  void Tick(int64_t now_ms) override;
  void Reset() override;

 private:
  static constexpr int64_t kCheckEveryMs = 1'000;
  const state::ClusterState& state_;
  Proposer& proposer_;
  const Clock* clock_;
  uint32_t grace_ms_;  // SIGTERM to SIGKILL for the server of an expired session
  int64_t next_check_ms_ = 0;
  std::set<uint64_t> in_flight_;
  // Bumped by Reset, so a callback from a former leadership changes nothing.
  uint64_t generation_ = 0;
};

}  // namespace gpool::control
