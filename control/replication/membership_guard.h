// MembershipGuard: the leader's judgement on replica changes, so that one
// cannot lose the cluster its quorum by mistake.
//
//   - A replica joins as a learner (raft/entry.h) and is promoted to voter
//     only once it has caught up: it has acknowledged every committed entry
//     and was heard from within the liveness window. Until then it counts
//     toward nothing, so adding one that is slow or never answers changes
//     no majority (etcd's learner promotion).
//   - Removing a voter is refused when the voters left that are live (heard
//     from within the window, the leader itself included) would be fewer
//     than the new configuration's quorum; `force` overrides it, for an
//     operator who knows the others are coming back.
//
// "Heard from" is the wall-clock time of the last peer message from that
// replica, kept here rather than taken from Raft's check-quorum flags, which
// the core clears at every election timeout and so say nothing just after.
//
// Thread-safety: none; the replica's loop thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "control/raft/state.h"
#include "protocol/base/status.h"

namespace gpool::replication {

class MembershipGuard {
 public:
  // `window_ms`: how recently a replica must have been heard to be live
  // (about an election timeout).
  explicit MembershipGuard(int64_t window_ms) : window_ms_(window_ms) {}

  void Heard(uint64_t replica, int64_t now_ms) { heard_ms_[replica] = now_ms; }
  // A removed replica is no longer tracked.
  void Forget(uint64_t replica) { heard_ms_.erase(replica); }
  size_t tracked() const { return heard_ms_.size(); }
  bool Live(uint64_t replica, uint64_t self, int64_t now_ms) const;
  // Milliseconds since `replica` was last heard; -1 if never.
  int64_t HeardMsAgo(uint64_t replica, int64_t now_ms) const;

  // A learner the leader may promote now, if any (the lowest id first).
  std::optional<uint64_t> LearnerToPromote(const raft::NodeInfo& leader, int64_t now_ms) const;
  // The voter a leader that is stopping hands over to: a live one (other
  // than itself) with the highest match, the lowest id among equals, so the
  // transfer needs the least catching up and goes to a replica that answers.
  // nullopt when this is not a leader or no other voter is live.
  std::optional<uint64_t> HandOverTarget(const raft::NodeInfo& leader, int64_t now_ms) const;
  // FailedPrecondition naming the replicas that are not live when removing
  // `replica` would leave fewer live voters than a quorum, unless `force`.
  Status CheckRemoval(const raft::NodeInfo& leader, uint64_t replica, bool force, int64_t now_ms) const;

 private:
  int64_t window_ms_;
  std::map<uint64_t, int64_t> heard_ms_;
};

}  // namespace gpool::replication
