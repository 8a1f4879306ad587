// RetentionDriver: the leader's side of retention (control/state/retention.h).
//
// Every RetentionPolicy::check_every_ms the serving leader asks the state
// whether any finished job is past the policy (finished more than keep_ms
// ago by the leader's wall clock, or beyond the newest keep_jobs finished)
// and, if so, proposes one ForgetJobsCmd carrying the cutoff it computed and
// keep_jobs. Apply forgets the same jobs on every replica. One proposal in
// flight at a time; Reset (leadership changed) forgets it, since a new
// leader's callbacks are fresh.
//
// Thread-safety: the coordinator's loop thread owns it.
#pragma once

#include <cstdint>

#include "control/leader_service.h"
#include "control/ports.h"
#include "control/state/cluster_state.h"
#include "control/state/retention.h"
#include "protocol/base/clock.h"

namespace gpool::control {

class RetentionDriver : public LeaderService {
 public:
  RetentionDriver(const state::RetentionPolicy& policy, const state::ClusterState& state, Proposer& proposer,
                  const Clock* clock)
      : policy_(policy), state_(state), proposer_(proposer), clock_(clock) {}

  // Leader only. `now_ms` is monotonic.
  void Tick(int64_t now_ms) override;
  void Reset() override;

 private:
  state::RetentionPolicy policy_;
  const state::ClusterState& state_;
  Proposer& proposer_;
  const Clock* clock_;
  int64_t next_check_ms_ = 0;
  bool in_flight_ = false;
  // Bumped by Reset, so a callback from a former leadership changes nothing.
  uint64_t generation_ = 0;
};

}  // namespace gpool::control
