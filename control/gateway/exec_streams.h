// ExecStreams: the `gpool exec` commands each caller has open through this
// coordinator, so one user cannot hold every node's exec capacity
// (issue 48: --max-exec-streams-per-user).
//
// A stream is open from its start's reservation (ExecStart accepted for
// relay) until the worker's poll reply says it exited, the worker no longer
// knows it (NotFound), or nobody polled it for its lease: the worker kills
// a command not polled for lease_ms, so a stream whose client went away
// frees its slot then without any word from anyone. A start that fails
// gives its reservation back. A retried start (same ExecStart.key) is
// answered with the same exec id by the worker and counts once.
//
// Streams are keyed by (node, exec id); the owner is whoever the limit
// holds (a user's name; a job's own launcher counts as "job N"). Callers
// the limit does not hold (admins) are not recorded at all.
//
// Leader-local: a new leader starts empty (the old one's streams run out
// their leases on the workers meanwhile).
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "protocol/base/status.h"

namespace gpool::control {

class ExecStreams {
 public:
  // `grace_ms` past a lease before a silent stream is taken for killed.
  explicit ExecStreams(uint32_t max_per_user, int64_t grace_ms = 2000)
      : max_per_user_(max_per_user), grace_ms_(grace_ms) {}

  // Takes a slot for a start about to be relayed, or ResourceExhausted
  // naming the limit when `owner` holds all of its own.
  Status Reserve(const std::string& owner);
  // The start was refused or never answered: its slot is free again.
  void Release(const std::string& owner);
  // The worker started it: the reservation becomes the stream (node,
  // exec_id), open until `now_ms + lease_ms` unless polled. A stream the
  // ledger already has (a retried start) keeps its one slot.
  void Started(const std::string& owner, const std::string& node, uint64_t exec_id, uint32_t lease_ms,
               int64_t now_ms);
  // A poll of it reached the worker: its lease starts over.
  void Polled(const std::string& node, uint64_t exec_id, int64_t now_ms);
  // It exited (drained), or the worker no longer knows it.
  void Ended(const std::string& node, uint64_t exec_id);
  // Frees the streams whose lease ran out unpolled. Every loop turn.
  void Expire(int64_t now_ms);
  // Every stream and reservation (leadership moved).
  void Clear();

  uint32_t held(const std::string& owner) const;
  size_t open() const { return streams_.size(); }
  uint32_t limit() const { return max_per_user_; }

 private:
  struct Stream {
    std::string owner;
    uint32_t lease_ms = 0;
    int64_t deadline_ms = 0;
  };
  void Drop(std::map<std::pair<std::string, uint64_t>, Stream>::iterator it);

  uint32_t max_per_user_;
  int64_t grace_ms_;
  std::map<std::pair<std::string, uint64_t>, Stream> streams_;  // by (node, exec id)
  std::map<std::string, uint32_t> held_;  // by owner: streams and reservations
  int64_t next_expiry_check_ms_ = 0;
};

}  // namespace gpool::control
