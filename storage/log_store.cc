#include "storage/log_store.h"

#include <algorithm>

#include "storage/key_encoding.h"
#include "storage/log_codec.h"

namespace gpool::storage {
namespace {

using log_codec::LogKey;

// Reads the index of the first (or last) key under the log prefix, if any.
Result<std::optional<uint64_t>> EdgeLogIndex(KvStore& kv, bool last) {
  std::unique_ptr<KvIterator> it = kv.NewIterator();
  if (last) {
    std::string end = PrefixSuccessor(log_codec::kLogPrefix);
    it->Seek(end);
    if (it->Valid()) {
      it->Prev();
    } else {
      GPOOL_RETURN_IF_ERROR(it->status());
      it->SeekToLast();
    }
  } else {
    it->Seek(log_codec::kLogPrefix);
  }
  if (!it->Valid() || !it->key().starts_with(log_codec::kLogPrefix)) {
    GPOOL_RETURN_IF_ERROR(it->status());
    return std::optional<uint64_t>();
  }
  GPOOL_ASSIGN_OR_RETURN(uint64_t index, log_codec::ParseLogKey(it->key()));
  return std::optional<uint64_t>(index);
}

Status Compacted(uint64_t index, uint64_t first) {
  return Status::NotFound("raft log index " + std::to_string(index) +
                          " is compacted (first index " + std::to_string(first) + ")");
}

}  // namespace

Result<LogStore::Positions> LogStore::Load(KvStore& kv) {
  Positions p;
  GPOOL_ASSIGN_OR_RETURN(std::optional<std::string> hs_value, kv.Get(log_codec::kHardStateKey));
  if (hs_value) {
    GPOOL_ASSIGN_OR_RETURN(p.hard_state, log_codec::DecodeHardState(*hs_value));
  }
  GPOOL_ASSIGN_OR_RETURN(std::optional<std::string> tr_value, kv.Get(log_codec::kTruncatedKey));
  if (tr_value) {
    GPOOL_ASSIGN_OR_RETURN(p.truncated, log_codec::DecodePosition(*tr_value, "raft truncated state"));
  }

  // Every write keeps the live entries contiguous from truncated.index+1, so a
  // log that starts elsewhere was written by something else or damaged.
  // Entries at or below truncated.index are compacted ones TrimCompacted had
  // not deleted yet: the live log is then checked from truncated.index+1.
  p.last_index = p.truncated.index;
  p.trim_next = p.truncated.index + 1;
  GPOOL_ASSIGN_OR_RETURN(std::optional<uint64_t> first, EdgeLogIndex(kv, /*last=*/false));
  if (first && *first <= p.truncated.index) {
    p.trim_next = *first;
    std::unique_ptr<KvIterator> it = kv.NewIterator();
    it->Seek(LogKey(p.truncated.index + 1));
    first.reset();
    if (it->Valid() && it->key().starts_with(log_codec::kLogPrefix)) {
      GPOOL_ASSIGN_OR_RETURN(uint64_t live, log_codec::ParseLogKey(it->key()));
      first = live;
    } else {
      GPOOL_RETURN_IF_ERROR(it->status());
    }
  }
  if (first) {
    if (*first != p.truncated.index + 1) {
      return Status::Malformed("raft log starts at index " + std::to_string(*first) +
                               ", expected " + std::to_string(p.truncated.index + 1));
    }
    GPOOL_ASSIGN_OR_RETURN(std::optional<uint64_t> last, EdgeLogIndex(kv, /*last=*/true));
    p.last_index = last.value_or(p.truncated.index);
  }
  return p;
}

Result<std::unique_ptr<LogStore>> LogStore::Open(KvStore* kv) {
  if (kv == nullptr) return Status::InvalidArgument("log store: kv is null");
  GPOOL_ASSIGN_OR_RETURN(Positions p, Load(*kv));
  auto store = std::unique_ptr<LogStore>(new LogStore(kv, p.truncated, p.last_index, p.hard_state));
  store->trim_next_ = p.trim_next;
  return store;
}

Status LogStore::Reload() {
  std::lock_guard lock(mu_);
  GPOOL_ASSIGN_OR_RETURN(Positions p, Load(*kv_));
  truncated_ = p.truncated;
  last_index_ = p.last_index;
  hard_state_ = p.hard_state;
  trim_next_ = p.trim_next;
  return Status::Ok();
}

Status LogStore::TruncateAfter(uint64_t index) {
  std::lock_guard lock(mu_);
  if (index >= last_index_) return Status::Ok();
  if (index < truncated_.index) {
    return Status::FailedPrecondition("raft log truncate after " + std::to_string(index) +
                                      ": below the compacted index " + std::to_string(truncated_.index));
  }
  WriteBatch batch;
  StageDeleteRange(index + 1, last_index_, &batch);
  GPOOL_RETURN_IF_ERROR(kv_->Write(batch, WriteOptions{.sync = true}));
  last_index_ = index;
  return Status::Ok();
}

LogStore::LogStore(KvStore* kv, SnapshotMeta truncated, uint64_t last_index, HardState hard_state)
    : kv_(kv), truncated_(truncated), last_index_(last_index), hard_state_(hard_state) {}

uint64_t LogStore::FirstIndex() const {
  std::lock_guard lock(mu_);
  return truncated_.index + 1;
}

uint64_t LogStore::LastIndex() const {
  std::lock_guard lock(mu_);
  return last_index_;
}

HardState LogStore::hard_state() const {
  std::lock_guard lock(mu_);
  return hard_state_;
}

void LogStore::StageDeleteRange(uint64_t lo, uint64_t hi_inclusive, WriteBatch* batch) const {
  for (uint64_t i = lo; i <= hi_inclusive; ++i) batch->Delete(LogKey(i));
}

Status LogStore::StageAppend(const std::vector<LogEntry>& entries, WriteBatch* batch,
                             uint64_t* new_last) {
  *new_last = last_index_;
  if (entries.empty()) return Status::Ok();
  if (entries.front().index == 0) {
    return Status::InvalidArgument("raft log append: index 0 is not a valid entry index");
  }
  for (size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].index != entries[i - 1].index + 1) {
      return Status::InvalidArgument("raft log append: entries[" + std::to_string(i) +
                                     "] has index " + std::to_string(entries[i].index) +
                                     ", want " + std::to_string(entries[i - 1].index + 1));
    }
    if (entries[i].term < entries[i - 1].term) {
      return Status::InvalidArgument("raft log append: entries[" + std::to_string(i) +
                                     "] term " + std::to_string(entries[i].term) +
                                     " is below the previous entry's");
    }
  }

  // Compacted entries are committed, so any copy of them matches what was
  // dropped; only the part past the compaction point is written.
  size_t skip = 0;
  while (skip < entries.size() && entries[skip].index <= truncated_.index) ++skip;
  if (skip == entries.size()) return Status::Ok();
  const LogEntry& first = entries[skip];

  if (first.index > last_index_ + 1) {
    return Status::InvalidArgument("raft log append: entry " + std::to_string(first.index) +
                                   " leaves a gap after last index " +
                                   std::to_string(last_index_));
  }
  GPOOL_ASSIGN_OR_RETURN(uint64_t prev_term, TermLocked(first.index - 1));
  if (first.term < prev_term) {
    return Status::InvalidArgument("raft log append: entry " + std::to_string(first.index) +
                                   " term " + std::to_string(first.term) +
                                   " is below the preceding entry's term " +
                                   std::to_string(prev_term));
  }

  // Raft's truncation: whatever follows the new entries must go, or a stale
  // tail from an old leader would survive behind them.
  StageDeleteRange(entries.back().index + 1, last_index_, batch);
  for (size_t i = skip; i < entries.size(); ++i) {
    batch->Put(LogKey(entries[i].index), log_codec::EncodeEntry(entries[i]));
  }
  *new_last = entries.back().index;
  return Status::Ok();
}

Status LogStore::Append(const std::vector<LogEntry>& entries, bool sync) {
  std::lock_guard lock(mu_);
  WriteBatch batch;
  uint64_t new_last = 0;
  GPOOL_RETURN_IF_ERROR(StageAppend(entries, &batch, &new_last));
  if (batch.empty()) return Status::Ok();
  GPOOL_RETURN_IF_ERROR(kv_->Write(batch, WriteOptions{.sync = sync}));
  last_index_ = new_last;
  return Status::Ok();
}

Status LogStore::SaveHardState(const HardState& state, bool sync) {
  return Save(state, {}, sync);
}

Status LogStore::Save(const HardState& state, const std::vector<LogEntry>& entries, bool sync) {
  std::lock_guard lock(mu_);
  WriteBatch batch;
  uint64_t new_last = 0;
  GPOOL_RETURN_IF_ERROR(StageAppend(entries, &batch, &new_last));
  batch.Put(log_codec::kHardStateKey, log_codec::EncodeHardState(state));
  GPOOL_RETURN_IF_ERROR(kv_->Write(batch, WriteOptions{.sync = sync}));
  last_index_ = new_last;
  hard_state_ = state;
  return Status::Ok();
}

Result<uint64_t> LogStore::Term(uint64_t index) {
  std::lock_guard lock(mu_);
  return TermLocked(index);
}

Result<uint64_t> LogStore::TermLocked(uint64_t index) {
  if (index < truncated_.index) return Compacted(index, truncated_.index + 1);
  if (index == truncated_.index) return truncated_.term;
  if (index > last_index_) {
    return Status::Unavailable("raft log index " + std::to_string(index) +
                               " is past the last index " + std::to_string(last_index_));
  }
  GPOOL_ASSIGN_OR_RETURN(std::optional<std::string> value, kv_->Get(LogKey(index)));
  if (!value) {
    return Status::Internal("raft log entry " + std::to_string(index) + " is missing from [" +
                            std::to_string(truncated_.index + 1) + ", " +
                            std::to_string(last_index_) + "]");
  }
  GPOOL_ASSIGN_OR_RETURN(LogEntry entry, log_codec::DecodeEntry(index, *value));
  return entry.term;
}

Result<std::vector<LogEntry>> LogStore::Entries(uint64_t lo, uint64_t hi, uint64_t max_bytes) {
  std::lock_guard lock(mu_);
  if (lo > hi) {
    return Status::InvalidArgument("raft log entries: lo " + std::to_string(lo) + " > hi " +
                                   std::to_string(hi));
  }
  if (lo <= truncated_.index) return Compacted(lo, truncated_.index + 1);
  if (hi > last_index_ + 1) {
    return Status::InvalidArgument("raft log entries: hi " + std::to_string(hi) +
                                   " is past last index " + std::to_string(last_index_) + " + 1");
  }

  std::vector<LogEntry> out;
  uint64_t bytes = 0;
  std::unique_ptr<KvIterator> it = kv_->NewIterator();
  it->Seek(LogKey(lo));
  for (uint64_t want = lo; want < hi; ++want, it->Next()) {
    if (!it->Valid()) {
      GPOOL_RETURN_IF_ERROR(it->status());
      return Status::Internal("raft log entry " + std::to_string(want) + " is missing");
    }
    GPOOL_ASSIGN_OR_RETURN(uint64_t index, log_codec::ParseLogKey(it->key()));
    if (index != want) {
      return Status::Internal("raft log entry " + std::to_string(want) + " is missing");
    }
    GPOOL_ASSIGN_OR_RETURN(LogEntry entry, log_codec::DecodeEntry(index, it->value()));
    bytes += entry.ByteSize();
    if (!out.empty() && bytes > max_bytes) break;
    out.push_back(std::move(entry));
  }
  return out;
}

Status LogStore::SaveSnapshot(const SnapshotMeta& meta, std::string_view data, bool sync) {
  std::lock_guard lock(mu_);
  if (meta.index == 0) return Status::InvalidArgument("raft snapshot: index 0");
  if (meta.index < truncated_.index) {
    return Status::FailedPrecondition("raft snapshot at index " + std::to_string(meta.index) +
                                      " is older than the compacted index " +
                                      std::to_string(truncated_.index));
  }
  bool keep_suffix = false;
  if (meta.index <= last_index_) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t term, TermLocked(meta.index));
    keep_suffix = term == meta.term;
  }

  WriteBatch batch;
  batch.Put(log_codec::kSnapshotMetaKey, log_codec::EncodePosition(meta));
  batch.Put(log_codec::kSnapshotDataKey, data);
  batch.Put(log_codec::kTruncatedKey, log_codec::EncodePosition(meta));
  // The covered entries are left to TrimCompacted; a suffix the snapshot
  // disagrees with goes now (a later open must not find it live).
  if (!keep_suffix) StageDeleteRange(std::max(truncated_.index, meta.index) + 1, last_index_, &batch);
  GPOOL_RETURN_IF_ERROR(kv_->Write(batch, WriteOptions{.sync = sync}));
  truncated_ = meta;
  if (!keep_suffix) last_index_ = meta.index;
  return Status::Ok();
}

Result<std::optional<std::pair<SnapshotMeta, std::string>>> LogStore::LoadSnapshot() {
  std::lock_guard lock(mu_);
  using Loaded = std::optional<std::pair<SnapshotMeta, std::string>>;
  GPOOL_ASSIGN_OR_RETURN(std::optional<std::string> meta_value,
                         kv_->Get(log_codec::kSnapshotMetaKey));
  if (!meta_value) return Loaded();
  GPOOL_ASSIGN_OR_RETURN(SnapshotMeta meta,
                         log_codec::DecodePosition(*meta_value, "raft snapshot meta"));
  GPOOL_ASSIGN_OR_RETURN(std::optional<std::string> data, kv_->Get(log_codec::kSnapshotDataKey));
  if (!data) return Status::Malformed("raft snapshot meta present but its data is missing");
  return Loaded(std::pair(meta, std::move(*data)));
}

Status LogStore::Compact(uint64_t up_to) {
  std::lock_guard lock(mu_);
  if (up_to <= truncated_.index) return Status::Ok();
  if (up_to > last_index_) {
    return Status::InvalidArgument("raft log compact: " + std::to_string(up_to) +
                                   " is past last index " + std::to_string(last_index_));
  }
  GPOOL_ASSIGN_OR_RETURN(uint64_t term, TermLocked(up_to));
  SnapshotMeta truncated{up_to, term};
  WriteBatch batch;
  batch.Put(log_codec::kTruncatedKey, log_codec::EncodePosition(truncated));
  GPOOL_RETURN_IF_ERROR(kv_->Write(batch, WriteOptions{.sync = false}));
  truncated_ = truncated;
  return Status::Ok();
}

Result<size_t> LogStore::TrimCompacted(size_t max_entries) {
  std::lock_guard lock(mu_);
  if (trim_next_ > truncated_.index || max_entries == 0) return size_t{0};
  {
    // From the first entry still stored: a follower that installed a snapshot
    // far past its log has a range of indexes it never held.
    std::unique_ptr<KvIterator> it = kv_->NewIterator();
    it->Seek(LogKey(trim_next_));
    uint64_t stored = truncated_.index + 1;
    if (it->Valid() && it->key().starts_with(log_codec::kLogPrefix)) {
      GPOOL_ASSIGN_OR_RETURN(stored, log_codec::ParseLogKey(it->key()));
    } else {
      GPOOL_RETURN_IF_ERROR(it->status());
    }
    trim_next_ = std::max(trim_next_, stored);
    if (trim_next_ > truncated_.index) return size_t{0};
  }
  const uint64_t hi = std::min<uint64_t>(truncated_.index, trim_next_ + max_entries - 1);
  WriteBatch batch;
  StageDeleteRange(trim_next_, hi, &batch);
  // Not synced: a delete lost in a crash is found again at the next open.
  GPOOL_RETURN_IF_ERROR(kv_->Write(batch, WriteOptions{.sync = false}));
  const auto deleted = static_cast<size_t>(hi - trim_next_ + 1);
  trim_next_ = hi + 1;
  return deleted;
}

uint64_t LogStore::CompactedLeft() const {
  std::lock_guard lock(mu_);
  return trim_next_ > truncated_.index ? 0 : truncated_.index - trim_next_ + 1;
}

}  // namespace gpool::storage
