// ConfHistory: which configuration is in force at each index of the live log.
//
// Raft here uses single-server changes that take effect as soon as a node
// appends the entry, committed or not (thesis 4.1). So the configuration a
// node acts on is the one in the latest configuration entry of its log, and
// if that entry is overwritten by a conflicting leader the node falls back to
// the one before. This class keeps the base configuration (the one in force
// at the snapshot index) plus every configuration entry in the live log, so
// those answers are a map lookup. RaftLog owns one and feeds it every append,
// truncation, compaction and snapshot restore.
//
// Thread-safety: none; owned by the RaftLog of one core.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <utility>

#include "control/raft/entry.h"

namespace gpool::raft {

class ConfHistory {
 public:
  ConfHistory() = default;
  ConfHistory(uint64_t base_index, ConfState base) : base_index_(base_index), base_(std::move(base)) {}

  // The configuration after the latest configuration entry (or the base).
  const ConfState& Latest() const { return changes_.empty() ? base_ : changes_.rbegin()->second; }
  // Index of the latest configuration entry; the base index if none.
  uint64_t LatestIndex() const { return changes_.empty() ? base_index_ : changes_.rbegin()->first; }
  // The configuration in force at `index` (>= the base index).
  const ConfState& At(uint64_t index) const {
    auto it = changes_.upper_bound(index);
    if (it == changes_.begin()) return base_;
    return std::prev(it)->second;
  }
  // Increments on every change of Latest(), so callers notice cheaply.
  uint64_t version() const { return version_; }

  void Add(uint64_t index, ConfState conf) {
    changes_[index] = std::move(conf);
    ++version_;
  }
  // The entries at `index` and later were removed from the log.
  void TruncateFrom(uint64_t index) {
    auto it = changes_.lower_bound(index);
    if (it == changes_.end()) return;
    changes_.erase(it, changes_.end());
    ++version_;
  }
  // Entries up to `index` were compacted into a snapshot.
  void CompactTo(uint64_t index) {
    base_ = At(index);
    base_index_ = index;
    changes_.erase(changes_.begin(), changes_.upper_bound(index));
  }
  // The log was replaced by a snapshot.
  void Reset(uint64_t index, ConfState conf) {
    base_index_ = index;
    base_ = std::move(conf);
    changes_.clear();
    ++version_;
  }

 private:
  uint64_t base_index_ = 0;
  ConfState base_;
  std::map<uint64_t, ConfState> changes_;
  uint64_t version_ = 0;
};

}  // namespace gpool::raft
