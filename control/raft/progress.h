// Progress: what a leader knows about one voter's log, and how it paces the
// appends it sends there. Owned by the leader's Raft core (raft.h), one per
// voter in the current configuration, rebuilt whenever a node becomes leader.
//
// Three states, as in etcd's tracker:
//   kProbe      the leader does not know where the logs agree; it sends one
//               append at a time (probe_sent) and moves `next` down on reject
//               using the follower's hint.
//   kReplicate  the logs agree up to `match`; the leader streams appends and
//               advances `next` optimistically when it sends (pipelining),
//               at most max_inflight messages (and max_inflight_bytes) ahead
//               of the acknowledgements.
//   kSnapshot   the entries the follower needs are compacted; the leader sent
//               a snapshot and sends nothing else until it is acknowledged,
//               or until a few election timeouts pass (it may have been lost).
//
// Thread-safety: none.
#pragma once

#include <cstdint>
#include <deque>
#include <string_view>

namespace gpool::raft {

enum class ProgressState : uint8_t { kProbe, kReplicate, kSnapshot };
std::string_view ProgressStateName(ProgressState state);

// The last index and the size of each append in flight to one follower,
// oldest first. Acknowledging index i frees every message that ended at or
// before i. Full at `capacity` messages or `max_bytes` of entries (0: no byte
// bound): a follower that stops reading holds at most that much of the
// leader's memory in its send queue, however large the appends.
class Inflights {
 public:
  explicit Inflights(uint64_t capacity, uint64_t max_bytes = 0) : capacity_(capacity), max_bytes_(max_bytes) {}
  void Add(uint64_t last_index, uint64_t bytes = 0) {
    in_flight_.push_back({last_index, bytes});
    bytes_ += bytes;
  }
  void FreeLE(uint64_t index) {
    while (!in_flight_.empty() && in_flight_.front().last_index <= index) FreeFirstOne();
  }
  void FreeFirstOne() {
    if (in_flight_.empty()) return;
    bytes_ -= in_flight_.front().bytes;
    in_flight_.pop_front();
  }
  bool Full() const { return in_flight_.size() >= capacity_ || (max_bytes_ > 0 && bytes_ >= max_bytes_); }
  uint64_t Count() const { return in_flight_.size(); }
  uint64_t Bytes() const { return bytes_; }
  void Reset() {
    in_flight_.clear();
    bytes_ = 0;
  }

 private:
  struct Sent {
    uint64_t last_index;
    uint64_t bytes;
  };
  uint64_t capacity_;
  uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  std::deque<Sent> in_flight_;
};

struct Progress {
  explicit Progress(uint64_t next_index, uint64_t max_inflight, uint64_t max_inflight_bytes = 0)
      : next(next_index), inflights(max_inflight, max_inflight_bytes) {}

  uint64_t match = 0;  // highest index known to be replicated on the follower
  uint64_t next = 1;   // index of the next entry to send
  ProgressState state = ProgressState::kProbe;
  bool probe_sent = false;        // kProbe: an append is outstanding; wait for a reply
  uint64_t pending_snapshot = 0;  // kSnapshot: index of the snapshot sent
  int snapshot_ticks = 0;         // kSnapshot: ticks since it was sent
  bool recent_active = true;      // heard from since the last check-quorum round
  Inflights inflights;

  void BecomeProbe();
  void BecomeReplicate();
  void BecomeSnapshot(uint64_t snapshot_index);
  // The follower acknowledged `index`; false if that is old news.
  bool MaybeUpdate(uint64_t index);
  // The follower rejected the append after `rejected`; its hint says the logs
  // may agree at `match_hint`. False if the reject is stale.
  bool MaybeDecrTo(uint64_t rejected, uint64_t match_hint);
  // The follower no longer holds entries it acknowledged (it restarted with
  // an empty data dir); its log now ends at `last_index`. Probe it afresh.
  void ForgetMatch(uint64_t last_index);
  // An append ending at `last_index` with `count` entries of `bytes`
  // (LogEntry::ByteSize) was just sent.
  void SentEntries(uint64_t last_index, uint64_t count, uint64_t bytes = 0);
  // Whether the leader should hold further appends back.
  bool IsPaused() const;
};

}  // namespace gpool::raft
