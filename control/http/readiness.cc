#include "control/http/readiness.h"

#include <string>

namespace gpool::control {

Status CheckReadiness(const ReadinessInput& input) {
  const ReadinessInput& r = input;
  if (input.removed) return Status::Unavailable("this replica was removed from the replica set");
  if (!r.replicated || r.role == "leader") {
    if (input.serving) return Status::Ok();
    return Status::Unavailable(r.replicated ? "leader, but it has not yet applied an entry of its term"
                                            : "not serving yet");
  }
  if (!r.voter) {
    return Status::Unavailable("not a voting member (a learner still catching up, or not in the configuration)");
  }
  if (r.leader_id == 0) {
    return Status::Unavailable("knows no leader (role " + r.role + ": an election, or quorum lost)");
  }
  if (r.applied_index < r.commit_index) {
    return Status::Unavailable("applied " + std::to_string(r.applied_index) + " of the " +
                               std::to_string(r.commit_index) + " entries it knows committed");
  }
  return Status::Ok();
}

}  // namespace gpool::control
