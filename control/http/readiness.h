// Readiness of a coordinator replica: what GET /readyz answers, for load
// balancers and Kubernetes readiness probes (docs/operations.md 3.8).
//
// A replica is ready when a request sent to it will be served now, by it or
// by the leader it names:
//   - a single coordinator: once it serves (state recovered, leading);
//   - the leader: once it serves (it has applied an entry of its own term);
//   - a follower: a voting member that knows a leader and has applied every
//     entry it knows to be committed.
// A learner still catching up, a replica with no leader (an election, or
// quorum lost), one behind on applying, or one that was removed is not.
// /healthz stays "the process answers"; readiness is this, a pure function of
// what the loop thread reports, so it is tested without sockets.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/base/status.h"

namespace gpool::control {

// What the loop thread knows (log::ReplicationReport and the ProposalTracker).
struct ReadinessInput {
  bool replicated = false;   // false: a single coordinator
  std::string role;          // this replica's Raft role: "leader", "follower", "candidate", ...
  bool voter = true;         // a voting member (not a learner, in the configuration)
  uint64_t leader_id = 0;    // the leader it knows; 0: none
  uint64_t commit_index = 0;
  uint64_t applied_index = 0;
  bool serving = false;      // ProposalTracker::leading(): leader, caught up with its term
  bool removed = false;      // this replica's removal from the replica set committed
};

// Ok when ready; otherwise Unavailable whose message says why not.
Status CheckReadiness(const ReadinessInput& input);

}  // namespace gpool::control
