// RaftLog: the core's view of its log: the latest snapshot, the live entries
// after it, and how far they are durable, committed and applied. (Not to be
// confused with control/replication/raft_log.h, the CommitLog actor around
// the whole core.)
//
// The core keeps the whole live log in memory: the actor hands it the durable
// entries at restart (InitialState) and the application bounds memory by
// compacting (RawNode::Compact) after it snapshots its state machine. That is
// what lets the core stay free of storage I/O: the durable copy in
// storage::LogStore is written by the actor from Ready and never read by the
// core. Layout, by index:
//
//   snapshot().index | first_index() ... stable_ | ... last_index()
//   (compacted)        durable entries             unstable: handed out in
//                                                  Ready::entries to persist
//
// Invariants: snapshot().index <= applied() <= committed() <= last_index()
// (applied() may lag a restored snapshot until the application takes it), and
// snapshot().index <= stable_ <= last_index(). A committed entry is never
// overwritten: a request to do so is reported as Internal (a Raft bug or a
// lying peer), never applied.
//
// Thread-safety: none; owned by one Raft core.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "control/raft/conf_history.h"
#include "control/raft/messages.h"

namespace gpool::raft {

class RaftLog {
 public:
  // The durable state at restart. `snapshot.conf` is the configuration in
  // force at snapshot.index (the bootstrap peers when there is no snapshot).
  // InvalidArgument if the entries do not follow the snapshot contiguously or
  // committed/applied are out of range.
  static Result<RaftLog> Open(Snapshot snapshot, std::vector<LogEntry> entries, uint64_t committed,
                              uint64_t applied);

  uint64_t first_index() const { return snapshot_.index + 1; }
  uint64_t last_index() const { return snapshot_.index + entries_.size(); }
  uint64_t last_term() const { return entries_.empty() ? snapshot_.term : entries_.back().term; }
  uint64_t committed() const { return committed_; }
  uint64_t applied() const { return applied_; }
  uint64_t stable() const { return stable_; }
  const Snapshot& snapshot() const { return snapshot_; }
  const ConfHistory& conf() const { return conf_; }

  // Term of the entry at `index`; known for [snapshot().index, last_index()].
  std::optional<uint64_t> Term(uint64_t index) const;
  bool MatchTerm(uint64_t index, uint64_t term) const;
  // Whether a candidate whose log ends at (last_index, last_term) is at least
  // as up to date as this log (paper 5.4.1).
  bool IsUpToDate(uint64_t last_index, uint64_t last_term) const;
  // The entry at `index`, or null if compacted or past the end.
  const LogEntry* At(uint64_t index) const;
  // Entries from `lo` on, at most max_count of them and at most max_bytes
  // beyond the first. nullopt if `lo` is compacted; empty past the end.
  std::optional<std::vector<LogEntry>> Entries(uint64_t lo, uint64_t max_count, uint64_t max_bytes) const;
  // The largest index <= `index` whose term is <= `term`, with that term (0
  // when the search reaches the compacted prefix): where two logs may agree.
  std::pair<uint64_t, uint64_t> FindConflictByTerm(uint64_t index, uint64_t term) const;

  // Leader: appends entries that start at last_index() + 1.
  Status Append(std::vector<LogEntry> entries);
  // Follower: the consistency check and append of an Append message. Returns
  // the index of the last entry the message covers, or nullopt if the log
  // has no entry (index, log_term). Entries already present are kept; the
  // first conflicting one and everything after it are replaced.
  Result<std::optional<uint64_t>> MaybeAppend(uint64_t index, uint64_t log_term, uint64_t commit,
                                              const std::vector<LogEntry>& entries);
  // Leader: commits `index` if it is new and from `term` (paper 5.4.2).
  bool MaybeCommit(uint64_t index, uint64_t term);
  // Raises the commit index; Internal if past the last entry.
  Status CommitTo(uint64_t index);
  void AppliedTo(uint64_t index);

  // Follower: replaces the whole log with a leader's snapshot; it is pending
  // (unstable) until StableSnapshotTo().
  void Restore(Snapshot snapshot);
  // The application snapshotted its state at `snapshot.index` (<= applied):
  // drop the entries it covers.
  Status Compact(Snapshot snapshot);
  // The entries Compact dropped, for the caller to free (off its loop);
  // empty afterwards.
  std::vector<LogEntry> TakeCompacted() { return std::exchange(compacted_, {}); }

  // The persistence boundary.
  bool HasUnstableEntries() const { return last_index() > stable_; }
  std::vector<LogEntry> UnstableEntries() const;
  const std::optional<Snapshot>& pending_snapshot() const { return pending_snapshot_; }
  // Entries up to (index, term) are durable, unless the log changed since.
  void StableTo(uint64_t index, uint64_t term);
  void StableSnapshotTo(uint64_t index);

  // Committed entries the application has not been handed yet, at most
  // `max_entries` of them (0: all).
  bool HasNextCommitted() const { return committed_ > ApplyFrom(); }
  uint64_t NextCommittedCount() const { return HasNextCommitted() ? committed_ - ApplyFrom() : 0; }
  std::vector<LogEntry> NextCommitted(uint64_t max_entries = 0) const;

 private:
  RaftLog() = default;
  uint64_t ApplyFrom() const { return std::max(applied_, snapshot_.index); }
  // Appends entries starting anywhere in (committed_, last_index() + 1],
  // dropping the conflicting suffix.
  Status TruncateAndAppend(std::vector<LogEntry> entries);
  Status TrackConf(const LogEntry& entry);

  Snapshot snapshot_;
  std::vector<LogEntry> entries_;  // entries_[i].index == snapshot_.index + 1 + i
  std::vector<LogEntry> compacted_;  // what Compact dropped, until TakeCompacted
  std::optional<Snapshot> pending_snapshot_;
  uint64_t stable_ = 0;
  uint64_t committed_ = 0;
  uint64_t applied_ = 0;
  ConfHistory conf_;
};

}  // namespace gpool::raft
