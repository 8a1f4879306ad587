// MemoryLog: an in-memory model of what storage::LogStore keeps durable for
// one node: the hard state, the latest snapshot and the log after it. Tests
// and the simulator write each Ready here before sending its messages, so a
// simulated crash keeps exactly this and loses the rest, which is the
// persistence boundary the real actor has. The append and snapshot rules
// copy LogStore's (log_store.h) so the model cannot be kinder than the disk.
//
// Thread-safety: none. Header-only: it is small and test-only.
#pragma once

#include <cstdint>
#include <vector>

#include "control/raft/raft.h"
#include "control/raft/ready.h"

namespace gpool::raft::sim {

class MemoryLog {
 public:
  const HardState& hard_state() const { return hard_state_; }
  const Snapshot& snapshot() const { return snapshot_; }
  const std::vector<LogEntry>& entries() const { return entries_; }
  uint64_t first_index() const { return snapshot_.index + 1; }
  uint64_t last_index() const { return snapshot_.index + entries_.size(); }
  const LogEntry* At(uint64_t index) const {
    if (index < first_index() || index > last_index()) return nullptr;
    return &entries_[index - first_index()];
  }
  uint64_t Term(uint64_t index) const {
    if (index == snapshot_.index) return snapshot_.term;
    const LogEntry* e = At(index);
    return e == nullptr ? 0 : e->term;
  }

  // Step 1 of handling a Ready (ready.h): snapshot, entries, hard state.
  void Persist(const Ready& rd) {
    if (rd.snapshot.has_value()) SaveSnapshot(*rd.snapshot);
    Append(rd.entries);
    if (rd.hard_state.has_value()) hard_state_ = *rd.hard_state;
  }

  // LogStore::Append: an entry at an index the log has replaces it and
  // drops everything after it.
  void Append(const std::vector<LogEntry>& entries) {
    for (const LogEntry& e : entries) {
      if (e.index <= snapshot_.index) continue;
      if (e.index <= last_index()) entries_.resize(e.index - first_index());
      entries_.push_back(e);
    }
  }

  // LogStore::SaveSnapshot: keep the entries after the snapshot only if the
  // log agrees with it at its index.
  void SaveSnapshot(const Snapshot& s) {
    if (s.index <= snapshot_.index) return;
    if (Term(s.index) == s.term && s.index <= last_index()) {
      entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(s.index - snapshot_.index));
    } else {
      entries_.clear();
    }
    snapshot_ = s;
  }

  InitialState ToInitialState() const {
    return InitialState{hard_state_, snapshot_, entries_, snapshot_.index};
  }

 private:
  HardState hard_state_;
  Snapshot snapshot_;
  std::vector<LogEntry> entries_;  // entries_[i].index == snapshot_.index + 1 + i
};

}  // namespace gpool::raft::sim
