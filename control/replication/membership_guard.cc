#include "control/replication/membership_guard.h"
#include "protocol/model/users.h"

#include <algorithm>
#include <string>
#include <vector>

namespace gpool::replication {

bool MembershipGuard::Live(uint64_t replica, uint64_t self, int64_t now_ms) const {
  if (replica == self) return true;
  auto it = heard_ms_.find(replica);
  return it != heard_ms_.end() && now_ms - it->second <= window_ms_;
}

int64_t MembershipGuard::HeardMsAgo(uint64_t replica, int64_t now_ms) const {
  auto it = heard_ms_.find(replica);
  return it == heard_ms_.end() ? -1 : now_ms - it->second;
}

std::optional<uint64_t> MembershipGuard::LearnerToPromote(const raft::NodeInfo& leader, int64_t now_ms) const {
  if (leader.role != raft::Role::kLeader) return std::nullopt;
  for (uint64_t learner : leader.learners) {
    auto pr = leader.progress.find(learner);
    if (pr == leader.progress.end()) continue;
    // Caught up: holds every committed entry, so as a voter it neither
    // slows commits down nor could win an election it should not.
    if (pr->second.match >= leader.commit && Live(learner, leader.id, now_ms)) return learner;
  }
  return std::nullopt;
}

std::optional<uint64_t> MembershipGuard::HandOverTarget(const raft::NodeInfo& leader, int64_t now_ms) const {
  if (leader.role != raft::Role::kLeader) return std::nullopt;
  std::optional<uint64_t> best;
  uint64_t best_match = 0;
  for (uint64_t voter : leader.voters) {  // sorted: among equal matches the lowest id wins
    if (voter == leader.id || !Live(voter, leader.id, now_ms)) continue;
    auto pr = leader.progress.find(voter);
    if (pr == leader.progress.end()) continue;
    if (!best.has_value() || pr->second.match > best_match) {
      best = voter;
      best_match = pr->second.match;
    }
  }
  return best;
}

Status MembershipGuard::CheckRemoval(const raft::NodeInfo& leader, uint64_t replica, bool force,
                                     int64_t now_ms) const {
  if (force) return Status::Ok();
  if (!std::binary_search(leader.voters.begin(), leader.voters.end(), replica)) {
    return Status::Ok();  // a learner (or a stranger, which Raft refuses): no quorum at stake
  }
  std::vector<uint64_t> remaining;
  std::copy_if(leader.voters.begin(), leader.voters.end(), std::back_inserter(remaining),
               [&](uint64_t v) { return v != replica; });
  const size_t quorum = remaining.size() / 2 + 1;
  size_t live = 0;
  std::string down;
  for (uint64_t v : remaining) {
    if (Live(v, leader.id, now_ms)) {
      ++live;
    } else {
      down += (down.empty() ? "" : ", ") + std::to_string(v);
    }
  }
  if (live >= quorum) return Status::Ok();
  return Status::FailedPrecondition(
      "removing replica " + std::to_string(replica) + " would leave " + std::to_string(live) + " live voter" +
      (live == 1 ? "" : "s") + " of " + std::to_string(remaining.size()) + ", fewer than the quorum of " +
      std::to_string(quorum) + " (not heard from lately: " + down +
      "); bring them back first, or pass --force if you know they will return");
}

}  // namespace gpool::replication
