// What a Raft core reports about itself: its role, the volatile state that
// Ready carries when it changes, finished ReadIndex requests, and a summary
// for status pages and tests.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "control/raft/progress.h"
#include "protocol/model/users.h"

namespace gpool::raft {

enum class Role : uint8_t { kFollower, kPreCandidate, kCandidate, kLeader };
std::string_view RoleName(Role role);

// Volatile state, not persisted: who leads and what this node is.
struct SoftState {
  uint64_t lead = 0;  // 0 = no leader known
  Role role = Role::kFollower;
  bool operator==(const SoftState&) const = default;
};

// A finished ReadIndex request: reads issued with `context` may be served
// from the state machine once it has applied `index`. RawNode hands these out
// only when that is already true after applying the same Ready.
struct ReadState {
  uint64_t index = 0;
  std::string context;
  bool operator==(const ReadState&) const = default;
};

// The leader's view of one voter.
struct ProgressInfo {
  uint64_t match = 0;
  uint64_t next = 0;
  ProgressState state = ProgressState::kProbe;
  uint64_t inflight = 0;  // append messages not yet acknowledged
  bool recent_active = false;
  bool operator==(const ProgressInfo&) const = default;
};

struct NodeInfo {
  uint64_t id = 0;
  uint64_t term = 0;
  uint64_t vote = 0;
  uint64_t lead = 0;
  Role role = Role::kFollower;
  uint64_t commit = 0;
  uint64_t applied = 0;
  uint64_t first_index = 0;     // first live entry; earlier ones are compacted
  uint64_t last_index = 0;
  uint64_t snapshot_index = 0;
  std::vector<uint64_t> voters;    // the configuration in force (latest in the log)
  std::vector<uint64_t> learners;  // members that replicate but do not vote
  uint64_t lead_transferee = 0;  // leader only: a transfer in progress
  std::map<uint64_t, ProgressInfo> progress;  // leader only, one per voter and learner
  // Messages ignored since start: from outside the configuration, or with a
  // higher term from someone other than a live leader (see Raft::Step).
  uint64_t dropped_messages = 0;

  std::string ToString() const;
};

}  // namespace gpool::raft
