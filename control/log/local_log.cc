#include "control/log/local_log.h"

#include "control/log/image_file.h"
#include "protocol/wire.h"

namespace gpool::log {

Result<std::unique_ptr<LocalLog>> LocalLog::Open(storage::LogStore* store, std::string snapshot_dir) {
  std::unique_ptr<LocalLog> log(new LocalLog(store, std::move(snapshot_dir)));
  log->term_ = store->hard_state().term + 1;
  log->commit_index_ = store->LastIndex();
  log->next_index_ = store->LastIndex() + 1;
  // A disk that refuses the new term (full) leaves it owed to the first
  // Sync() that can write; see the header.
  log->owes_term_ = !log->SaveTerm().ok();
  return log;
}

Status LocalLog::SaveTerm() {
  storage::HardState hard;
  hard.term = term_;
  hard.vote = 0;
  hard.commit = commit_index_;
  return store_->SaveHardState(hard, /*sync=*/true);
}

Status LocalLog::ResumeWrites() {
  GPOOL_RETURN_IF_ERROR(store_->TruncateAfter(commit_index_));
  next_index_ = commit_index_ + 1;
  unsynced_.clear();
  GPOOL_RETURN_IF_ERROR(SaveTerm());
  owes_term_ = false;
  return Status::Ok();
}

Result<uint64_t> LocalLog::Propose(std::string data) {
  storage::LogEntry entry;
  entry.index = next_index_++;
  entry.term = term_;
  entry.data = std::move(data);
  unsynced_.push_back(std::move(entry));
  return unsynced_.back().index;
}

Result<Committed> LocalLog::Recover() {
  Committed recovered;
  auto snapshot = store_->LoadSnapshot();
  if (!snapshot.ok()) return snapshot.status().WithContext("loading snapshot");
  if (snapshot->has_value()) {
    auto& [meta, data] = **snapshot;
    std::string kept;  // the image file the record references, if any
    if (std::string_view(data).starts_with(kImageRefMagic)) {
      auto ref = wire::UnpackFromString<replication::ImageFileRef>(
          std::string_view(data).substr(kImageRefMagic.size()));
      if (!ref.ok()) return ref.status().WithContext("snapshot image reference");
      if (snapshot_dir_.empty()) {
        return Status::FailedPrecondition("the snapshot's image is the file " + ref->name +
                                          " but this coordinator was given no directory for snapshot images");
      }
      GPOOL_ASSIGN_OR_RETURN(data, replication::ReadImageFile(snapshot_dir_, *ref));
      kept = ref->name;
    }
    if (!snapshot_dir_.empty()) replication::RemoveImageFilesExcept(snapshot_dir_, kept);
    recovered.snapshot = StateSnapshot{meta.index, meta.term, std::move(data)};
  }
  uint64_t next = store_->FirstIndex();
  const uint64_t end = store_->LastIndex() + 1;
  while (next < end) {
    auto entries = store_->Entries(next, end, 64 << 20);
    if (!entries.ok()) return entries.status().WithContext("replaying log");
    for (auto& entry : *entries) {
      next = entry.index + 1;
      recovered.entries.push_back(std::move(entry));
    }
  }
  return recovered;
}

Result<Committed> LocalLog::Sync() {
  Committed committed;
  Status status;
  // The term goes first: no entry of it may be durable before it is.
  if (owes_term_) status = SaveTerm();
  if (status.ok()) owes_term_ = false;
  if (status.ok() && unsynced_.empty()) return committed;
  if (status.ok()) status = store_->Append(unsynced_, /*sync=*/true);
  if (!status.ok()) {
    // Nothing was committed; the indexes are handed out again.
    if (!unsynced_.empty()) next_index_ = unsynced_.front().index;
    unsynced_.clear();
    return status;
  }
  committed.entries.swap(unsynced_);
  commit_index_ = committed.entries.back().index;
  return committed;
}

Status LocalLog::SaveSnapshot(uint64_t index, std::string_view data) {
  auto term = store_->Term(index);
  if (!term.ok()) return term.status();
  GPOOL_RETURN_IF_ERROR(store_->SaveSnapshot(storage::SnapshotMeta{index, *term}, data, /*sync=*/true));
  // A single replica has no election to lose: the covered entries go at once.
  GPOOL_RETURN_IF_ERROR(store_->TrimCompacted(SIZE_MAX).status());
  if (!snapshot_dir_.empty()) replication::RemoveImageFilesExcept(snapshot_dir_, "");
  return Status::Ok();
}

Status LocalLog::SaveSnapshotFile(uint64_t index, const std::string& path, uint64_t bytes, const std::string& sha256) {
  if (snapshot_dir_.empty()) return Status::FailedPrecondition("this log keeps snapshots inline");
  auto term = store_->Term(index);
  if (!term.ok()) return term.status();
  if (index < store_->FirstIndex()) {
    // Not newer than the snapshot in force: linking would replace its file.
    return Status::FailedPrecondition("snapshot at " + std::to_string(index) + " is not newer than the log's start");
  }
  GPOOL_RETURN_IF_ERROR(replication::LinkImageFile(path, snapshot_dir_, index));
  const replication::ImageFileRef ref{replication::ImageFileName(index), bytes, sha256};
  const std::string record = std::string(kImageRefMagic) + wire::PackToString(ref);
  GPOOL_RETURN_IF_ERROR(store_->SaveSnapshot(storage::SnapshotMeta{index, *term}, record, /*sync=*/true));
  // A single replica has no election to lose: the covered entries go at once.
  GPOOL_RETURN_IF_ERROR(store_->TrimCompacted(SIZE_MAX).status());
  replication::RemoveImageFilesExcept(snapshot_dir_, ref.name);
  return Status::Ok();
}

Result<uint64_t> LocalLog::ProposeMembership(const MembershipChange&) {
  return Status::FailedPrecondition(
      "this coordinator runs as a single replica (started without --peers); its replica set cannot change");
}

ReplicationReport LocalLog::Report() const {
  ReplicationReport report;
  report.role = "leader";
  report.term = term_;
  report.commit_index = commit_index_;
  report.applied_index = commit_index_;
  return report;
}

}  // namespace gpool::log
