#include "control/raft/entry_log.h"

#include <algorithm>
#include <iterator>
#include <string>

namespace gpool::raft {

Result<RaftLog> RaftLog::Open(Snapshot snapshot, std::vector<LogEntry> entries, uint64_t committed,
                              uint64_t applied) {
  uint64_t prev_term = snapshot.term;
  for (size_t i = 0; i < entries.size(); ++i) {
    const LogEntry& e = entries[i];
    if (e.index != snapshot.index + 1 + i) {
      return Status::InvalidArgument("raft log: entry " + std::to_string(e.index) + " found where " +
                                     std::to_string(snapshot.index + 1 + i) + " was expected");
    }
    if (e.term < prev_term) {
      return Status::InvalidArgument("raft log: entry " + std::to_string(e.index) + " has term " +
                                     std::to_string(e.term) + ", lower than the entry before it");
    }
    prev_term = e.term;
  }
  RaftLog log;
  snapshot.conf.Normalize();
  log.conf_ = ConfHistory(snapshot.index, snapshot.conf);
  log.snapshot_ = std::move(snapshot);
  log.entries_ = std::move(entries);
  log.stable_ = log.last_index();
  // A snapshot counts as committed and applied even if the hard state that
  // said so was not written before a crash.
  committed = std::max(committed, log.snapshot_.index);
  applied = std::max(applied, log.snapshot_.index);
  if (committed > log.last_index()) {
    return Status::InvalidArgument("raft log: commit index " + std::to_string(committed) +
                                   " is past the last entry " + std::to_string(log.last_index()));
  }
  if (applied > committed) {
    return Status::InvalidArgument("raft log: applied index " + std::to_string(applied) +
                                   " is past the commit index " + std::to_string(committed));
  }
  log.committed_ = committed;
  log.applied_ = applied;
  for (const auto& e : log.entries_) GPOOL_RETURN_IF_ERROR(log.TrackConf(e));
  return log;
}

std::optional<uint64_t> RaftLog::Term(uint64_t index) const {
  if (index == snapshot_.index) return snapshot_.term;
  if (index < snapshot_.index || index > last_index()) return std::nullopt;
  return entries_[index - first_index()].term;
}

bool RaftLog::MatchTerm(uint64_t index, uint64_t term) const {
  auto t = Term(index);
  return t.has_value() && *t == term;
}

bool RaftLog::IsUpToDate(uint64_t index, uint64_t term) const {
  return term > last_term() || (term == last_term() && index >= last_index());
}

const LogEntry* RaftLog::At(uint64_t index) const {
  if (index < first_index() || index > last_index()) return nullptr;
  return &entries_[index - first_index()];
}

std::optional<std::vector<LogEntry>> RaftLog::Entries(uint64_t lo, uint64_t max_count,
                                                      uint64_t max_bytes) const {
  if (lo <= snapshot_.index) return std::nullopt;
  std::vector<LogEntry> out;
  uint64_t bytes = 0;
  for (uint64_t i = lo; i <= last_index() && out.size() < max_count; ++i) {
    const LogEntry& e = entries_[i - first_index()];
    bytes += e.ByteSize();
    if (!out.empty() && bytes > max_bytes) break;
    out.push_back(e);
  }
  return out;
}

std::pair<uint64_t, uint64_t> RaftLog::FindConflictByTerm(uint64_t index, uint64_t term) const {
  index = std::min(index, last_index());
  while (true) {
    auto t = Term(index);
    if (!t.has_value()) return {index, 0};
    if (*t <= term || index == 0) return {index, *t};
    --index;
  }
}

Status RaftLog::TrackConf(const LogEntry& entry) {
  if (TypeOf(entry) != EntryType::kConfChange) return Status::Ok();
  auto cc = DecodeConfChange(entry);
  if (!cc.ok()) return Status::Internal("raft log: " + cc.status().ToString());
  conf_.Add(entry.index, std::move(cc->result));
  return Status::Ok();
}

Status RaftLog::TruncateAndAppend(std::vector<LogEntry> entries) {
  if (entries.empty()) return Status::Ok();
  const uint64_t after = entries.front().index;
  if (after <= committed_ || after > last_index() + 1) {
    return Status::Internal("raft log: cannot append at " + std::to_string(after) + " (committed " +
                            std::to_string(committed_) + ", last " + std::to_string(last_index()) + ")");
  }
  if (after <= last_index()) {
    entries_.resize(after - first_index());
    conf_.TruncateFrom(after);
    stable_ = std::min(stable_, after - 1);
  }
  for (auto& e : entries) {
    entries_.push_back(std::move(e));
    GPOOL_RETURN_IF_ERROR(TrackConf(entries_.back()));
  }
  return Status::Ok();
}

Status RaftLog::Append(std::vector<LogEntry> entries) {
  if (entries.empty()) return Status::Ok();
  if (entries.front().index != last_index() + 1) {
    return Status::Internal("raft log: leader append at " + std::to_string(entries.front().index) +
                            " but last index is " + std::to_string(last_index()));
  }
  return TruncateAndAppend(std::move(entries));
}

Result<std::optional<uint64_t>> RaftLog::MaybeAppend(uint64_t index, uint64_t log_term, uint64_t commit,
                                                     const std::vector<LogEntry>& entries) {
  if (!MatchTerm(index, log_term)) return std::optional<uint64_t>();
  const uint64_t last_new = index + entries.size();
  // Skip the entries the log already has; an Append may be a duplicate or
  // arrive after a later one, and must not truncate what that one added.
  size_t first_new = 0;
  while (first_new < entries.size() && MatchTerm(entries[first_new].index, entries[first_new].term)) {
    ++first_new;
  }
  if (first_new < entries.size()) {
    GPOOL_RETURN_IF_ERROR(TruncateAndAppend(
        std::vector<LogEntry>(entries.begin() + static_cast<std::ptrdiff_t>(first_new), entries.end())));
  }
  GPOOL_RETURN_IF_ERROR(CommitTo(std::min(commit, last_new)));
  return std::optional<uint64_t>(last_new);
}

bool RaftLog::MaybeCommit(uint64_t index, uint64_t term) {
  if (index <= committed_ || !MatchTerm(index, term)) return false;
  committed_ = index;
  return true;
}

Status RaftLog::CommitTo(uint64_t index) {
  if (index <= committed_) return Status::Ok();
  if (index > last_index()) {
    return Status::Internal("raft log: commit index " + std::to_string(index) + " is past the last entry " +
                            std::to_string(last_index()));
  }
  committed_ = index;
  return Status::Ok();
}

void RaftLog::AppliedTo(uint64_t index) { applied_ = std::max(applied_, std::min(index, committed_)); }

void RaftLog::Restore(Snapshot snapshot) {
  snapshot.conf.Normalize();
  entries_.clear();
  committed_ = snapshot.index;
  stable_ = snapshot.index;
  conf_.Reset(snapshot.index, snapshot.conf);
  pending_snapshot_ = snapshot;
  snapshot_ = std::move(snapshot);
}

Status RaftLog::Compact(Snapshot snapshot) {
  if (snapshot.index <= snapshot_.index) {
    return Status::FailedPrecondition("raft log: already compacted to " + std::to_string(snapshot_.index));
  }
  if (snapshot.index > applied_) {
    return Status::InvalidArgument("raft log: cannot compact to " + std::to_string(snapshot.index) +
                                   ", past the applied index " + std::to_string(applied_));
  }
  const auto covered = entries_.begin() + static_cast<std::ptrdiff_t>(snapshot.index - snapshot_.index);
  // Moved out, not destroyed here: freeing 200,000 entries' data took the
  // coordinator's loop 60-130 ms (TakeCompacted). A caller that never takes
  // them holds one compaction's worth at most.
  compacted_.clear();
  compacted_.insert(compacted_.end(), std::make_move_iterator(entries_.begin()), std::make_move_iterator(covered));
  entries_.erase(entries_.begin(), covered);
  conf_.CompactTo(snapshot.index);
  stable_ = std::max(stable_, snapshot.index);
  snapshot_ = std::move(snapshot);
  return Status::Ok();
}

std::vector<LogEntry> RaftLog::UnstableEntries() const {
  return std::vector<LogEntry>(entries_.begin() + static_cast<std::ptrdiff_t>(stable_ - snapshot_.index),
                               entries_.end());
}

void RaftLog::StableTo(uint64_t index, uint64_t term) {
  if (index > stable_ && MatchTerm(index, term)) stable_ = index;
}

void RaftLog::StableSnapshotTo(uint64_t index) {
  if (pending_snapshot_.has_value() && pending_snapshot_->index == index) pending_snapshot_.reset();
}

std::vector<LogEntry> RaftLog::NextCommitted(uint64_t max_entries) const {
  const uint64_t from = ApplyFrom() + 1;
  if (committed_ < from) return {};
  const uint64_t to = max_entries == 0 ? committed_ : std::min(committed_, from + max_entries - 1);
  return std::vector<LogEntry>(entries_.begin() + static_cast<std::ptrdiff_t>(from - first_index()),
                               entries_.begin() + static_cast<std::ptrdiff_t>(to - snapshot_.index));
}

}  // namespace gpool::raft
