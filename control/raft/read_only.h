// ReadOnly: a leader's pending ReadIndex requests (thesis 6.4).
//
// A read request records the commit index at the time it arrived; the
// leader then broadcasts a heartbeat carrying the request's context, and once
// a quorum has answered that heartbeat the leader knows it was still the
// leader after the request arrived, so that commit index is safe to read at.
// Heartbeats are answered in order, so a quorum for one context also confirms
// every request queued before it. Owned by the leader's Raft core; cleared
// whenever the node stops being leader (the requests are then dropped and the
// caller retries, as with any lost message).
//
// Thread-safety: none.
#pragma once

#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "protocol/messages_common.h"

namespace gpool::raft {

struct ReadRequest {
  uint64_t index = 0;  // commit index when the request arrived
  uint64_t from = 0;   // the node that asked (the leader itself, or a follower)
  std::string context;
  std::set<uint64_t> acks;
};

class ReadOnly {
 public:
  // Queues a request; false (and nothing queued) if its context is pending.
  bool Add(uint64_t index, uint64_t from, std::string context);
  // Records that `from` answered the heartbeat for `context`; returns the
  // request's acknowledgements, or null if the context is unknown.
  const std::set<uint64_t>* Ack(uint64_t from, const std::string& context);
  // Removes and returns every request up to and including `context`.
  std::vector<ReadRequest> Release(const std::string& context);
  // The context of the newest pending request ("" if none).
  std::string LastContext() const { return pending_.empty() ? std::string() : pending_.back().context; }
  size_t size() const { return pending_.size(); }
  void Clear() { pending_.clear(); }

 private:
  std::deque<ReadRequest> pending_;
};

}  // namespace gpool::raft
