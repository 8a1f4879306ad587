// SnapshotSchedule: when a replica replaces its log with a state snapshot.
//
// A snapshot costs in proportion to the state (every retained job, node and
// usage record is encoded and written), while the log it replaces grows with
// the entries since the last one. Taking one every fixed number of entries
// made the cost per entry grow with the cluster's history: with ~25k jobs
// retained, the snapshots every 10,000 entries took half of the leader's
// loop and of each follower during a burst of short jobs (issue 46).
//
// So a snapshot is due once BOTH hold:
//   - at least `min_entries` entries were applied since the last one, and
//   - the entries applied since then are at least `log_ratio` times the size
//     of the last snapshot (in encoded bytes).
// The second rule amortises the snapshot over the log it replaces: the
// snapshot work per logged byte stays at most 1/log_ratio of the encoding,
// whatever the state's size, and the log (disk, and the replay at start)
// stays at most ~log_ratio times the snapshot. log_ratio 0 gives the plain
// count rule. Before the first snapshot the size is unknown and the count
// rule alone applies.
//
// Stagger: replicas apply the same entries, so with the same thresholds all
// of them were due at the same index and forked their snapshot children
// together; on a small machine the three children took every core and the
// leader's loop went half a second without a turn (issue 49, gpool-bench-e2e).
// A replica's first snapshot after it starts waits (1 + stagger) times both
// thresholds; after it, the period is the same for all, so the phases stay
// apart (replica id % 3 thirds of a period: coordinator.h).
//
// Not thread-safe; the coordinator's loop owns it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpool::control {

class SnapshotSchedule {
 public:
  SnapshotSchedule(uint64_t min_entries, double log_ratio, double stagger = 0)
      : min_entries_(min_entries), log_ratio_(log_ratio), factor_(1 + stagger) {}

  // An entry of `bytes` was applied at `index`.
  void Applied(uint64_t index, size_t bytes);
  // The state at `index` is now a snapshot of `bytes` (taken here, recovered
  // at start or installed from the leader): the log before it is gone.
  // `bytes_left`: what was applied after `index` and so still counts towards
  // the next one (a snapshot encoded off the loop: snapshot_taker.h).
  void Covered(uint64_t index, size_t bytes, uint64_t bytes_left = 0);
  // This replica took a snapshot itself (after Covered): the stagger is spent.
  void Taken() { factor_ = 1; }

  bool Due() const;

  uint64_t last_index() const { return last_index_; }
  uint64_t entries_since() const { return applied_index_ > last_index_ ? applied_index_ - last_index_ : 0; }
  uint64_t bytes_since() const { return bytes_since_; }

 private:
  uint64_t min_entries_;
  double log_ratio_;
  double factor_;  // 1 + stagger until the first snapshot taken here
  uint64_t last_index_ = 0;
  uint64_t applied_index_ = 0;
  uint64_t last_bytes_ = 0;   // 0: no snapshot yet (or an empty one)
  uint64_t bytes_since_ = 0;
};

}  // namespace gpool::control
