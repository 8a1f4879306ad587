// LogStore: the Raft log, hard state and latest snapshot, kept in a KvStore
// under "raft/" (layout in storage/log_codec.h). It is the persistence half of
// the Raft actor: the pure Raft core asks for entries and terms here, and the
// actor saves each Ready here before sending messages.
//
// Log shape (as in etcd's raft.Storage): the live entries are
// [FirstIndex(), LastIndex()]; everything below FirstIndex() has been
// compacted away. The entry just below, FirstIndex()-1, is remembered by index
// and term (that is the snapshot's position after SaveSnapshot) so Term() can
// still answer the consistency check for the first live entry. An empty log
// has FirstIndex() == 1, LastIndex() == 0, Term(0) == 0.
//
// Every mutation is one atomic KvStore write: an append that overwrites a
// conflicting suffix, or a snapshot that drops the entries it covers, either
// happens whole or not at all, and the in-memory FirstIndex/LastIndex caches
// change only after the write succeeds.
//
// Errors: a compacted index gives a NotFound status ("compacted"), the cue to
// send a snapshot instead; an index past LastIndex() gives Unavailable; a value
// that does not decode gives Malformed; KvStore failures pass through (IoError).
//
// Ownership: the caller owns the KvStore and keeps it alive longer than this.
// Only one LogStore may be open on a KvStore at a time, since each caches
// first/last index; nothing else should write under "raft/".
//
// Thread-safety: all methods are safe to call from several threads; they are
// serialised on one internal mutex, held across the KvStore I/O. The intended
// use is a single writer (the Raft actor thread), so the lock is uncontended.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/kv_store.h"
#include "storage/log_types.h"

namespace gpool::storage {

class LogStore {
 public:
  static constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

  // Loads the first and last index and the hard state. Malformed if the stored
  // values do not decode or the log does not start right after the compacted
  // position.
  static Result<std::unique_ptr<LogStore>> Open(KvStore* kv);

  LogStore(const LogStore&) = delete;
  LogStore& operator=(const LogStore&) = delete;

  // Appends entries, which must have contiguous indexes and non-decreasing
  // terms, starting at most at LastIndex()+1 (else InvalidArgument: a gap).
  // Raft's rule: an entry at an index the log already has replaces it, and
  // every later entry is dropped, in the same atomic write. Entries at
  // compacted indexes are skipped; they are committed, so they match.
  Status Append(const std::vector<LogEntry>& entries, bool sync);
  Status SaveHardState(const HardState& state, bool sync);
  // Append plus SaveHardState in one atomic write, so a Raft Ready costs one
  // fsync rather than two.
  Status Save(const HardState& state, const std::vector<LogEntry>& entries, bool sync);

  // Entries in [lo, hi), stopping before the total ByteSize() would pass
  // max_bytes, but always at least one entry when lo < hi. NotFound if lo is
  // compacted; InvalidArgument if hi > LastIndex()+1 or lo > hi.
  Result<std::vector<LogEntry>> Entries(uint64_t lo, uint64_t hi, uint64_t max_bytes = kNoLimit);
  // Term of the entry at index, for indexes in [FirstIndex()-1, LastIndex()].
  Result<uint64_t> Term(uint64_t index);
  uint64_t FirstIndex() const;
  uint64_t LastIndex() const;
  HardState hard_state() const;

  // Stores the snapshot and drops the log entries it covers, atomically. If
  // the log holds meta.index with meta.term, later entries are kept; otherwise
  // the log disagrees with (or is behind) the snapshot and is dropped whole,
  // leaving LastIndex() == meta.index. A snapshot older than FirstIndex()-1 is
  // refused (FailedPrecondition).
  Status SaveSnapshot(const SnapshotMeta& meta, std::string_view data, bool sync);
  // The latest snapshot, or nullopt if none was ever saved.
  Result<std::optional<std::pair<SnapshotMeta, std::string>>> LoadSnapshot();

  // Drops entries <= up_to; FirstIndex() becomes up_to+1. No-op if already
  // compacted that far; InvalidArgument past LastIndex(). Not synced: losing
  // a compaction in a crash only keeps entries longer. Callers should compact
  // no further than their latest snapshot, or a lagging follower can be sent
  // neither the entries it lacks nor a snapshot that covers them.
  Status Compact(uint64_t up_to);
  // SaveSnapshot and Compact only move the first index: the entries they
  // cover are deleted here, at most `max_entries` per call, oldest first
  // (issue 49: a snapshot covering 160,000 entries staged as many deletes
  // in one synced batch, 200-300 ms on the coordinator's loop, long enough
  // for its followers to call an election). Returns how many were deleted;
  // 0 when none is left. A crash leaves the rest for the next open to find.
  Result<size_t> TrimCompacted(size_t max_entries);
  // Entries below FirstIndex() not yet deleted by TrimCompacted.
  uint64_t CompactedLeft() const;

  // Drops every entry after `index` (>= FirstIndex()-1), synced. A single
  // replica uses it after a failed write: a batch LevelDB refused can still
  // be found in its log when the database is reopened, and an entry nobody
  // was told is committed must not be replayed as if it were.
  Status TruncateAfter(uint64_t index);
  // Re-reads the first and last index and the hard state from the KvStore,
  // which was reopened underneath (LevelDbStore::Reopen after a failed write).
  Status Reload();

 private:
  struct Positions {
    uint64_t trim_next = 0;  // the first compacted entry still stored; truncated.index+1 if none
    SnapshotMeta truncated;
    uint64_t last_index = 0;
    HardState hard_state;
  };
  static Result<Positions> Load(KvStore& kv);

  LogStore(KvStore* kv, SnapshotMeta truncated, uint64_t last_index, HardState hard_state);

  // All require mu_.
  Result<uint64_t> TermLocked(uint64_t index);
  // Adds the writes for entries to batch; *new_last is LastIndex() after it.
  Status StageAppend(const std::vector<LogEntry>& entries, WriteBatch* batch, uint64_t* new_last);
  void StageDeleteRange(uint64_t lo, uint64_t hi_inclusive, WriteBatch* batch) const;

  KvStore* const kv_;
  mutable std::mutex mu_;
  SnapshotMeta truncated_;  // guarded by mu_; last removed entry, {0, 0} if none
  uint64_t last_index_;     // guarded by mu_; truncated_.index when the log is empty
  uint64_t trim_next_ = 0;  // guarded by mu_; entries [trim_next_, truncated_.index] are left to delete
  HardState hard_state_;    // guarded by mu_
};

}  // namespace gpool::storage
