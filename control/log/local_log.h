// LocalLog: a single-replica CommitLog. An entry is committed once it is
// fsynced to the LogStore; proposals made between two Sync() calls share one
// synchronous write (group commit), which is what makes it fast.
//
// Every Open() starts a new term and persists it before returning, so a
// restarted coordinator's commands always carry a higher epoch than anything
// its previous incarnation sent. On a full disk the new term cannot be
// written: Open() still succeeds, and the term is owed, written by the first
// Sync() that can (HasUnsynced() says so), so a coordinator started on a full
// disk comes up and serves reads.
//
// A failed Sync() commits nothing: its proposals are dropped and their
// indexes handed out again. LevelDB may still find the refused batch in its
// own log when the store is reopened, so ResumeWrites() drops every entry
// past the commit index before anything else is written.
// Thread-safety: none (one owner thread).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "control/log/commit_log.h"
#include "control/log/image_file_log.h"

namespace gpool::log {

class LocalLog final : public CommitLog, public ImageFileLog {
 public:
  // `store` must outlive the log. With a `snapshot_dir` (the data dir;
  // issue 49) snapshots may be kept as image files there (SaveSnapshotFile):
  // the store then holds a reference to the file (its name, length and
  // SHA-256), recognised by kImageRefMagic, which no bare image (a
  // MessagePack map) starts with; Recover() reads and checks the file.
  static Result<std::unique_ptr<LocalLog>> Open(storage::LogStore* store, std::string snapshot_dir = "");
  static constexpr std::string_view kImageRefMagic = "gpool-image-ref\n";

  // The stored snapshot and every durable entry after it: a single replica
  // commits what it persists, so all of them are committed.
  Result<Committed> Recover() override;
  Result<uint64_t> Propose(std::string data) override;
  Result<Committed> Sync() override;
  bool HasUnsynced() const override { return owes_term_ || !unsynced_.empty(); }
  bool IsLeader() const override { return true; }
  uint64_t term() const override { return term_; }
  uint64_t commit_index() const override { return commit_index_; }
  Status SaveSnapshot(uint64_t index, std::string_view data) override;
  // ImageFileLog.
  bool KeepsImageFiles() const override { return !snapshot_dir_.empty(); }
  Status SaveSnapshotFile(uint64_t index, const std::string& path, uint64_t bytes,
                          const std::string& sha256) override;

  // A single replica's state is always current: a read is ready at once.
  Status ReadIndex(std::string context) override {
    ready_reads_.push_back(std::move(context));
    return Status::Ok();
  }
  std::vector<std::string> TakeReadyReads() override { return std::exchange(ready_reads_, {}); }
  Result<uint64_t> ProposeMembership(const MembershipChange& change) override;
  ReplicationReport Report() const override;
  Status ResumeWrites() override;

 private:
  explicit LocalLog(storage::LogStore* store, std::string snapshot_dir)
      : store_(store), snapshot_dir_(std::move(snapshot_dir)) {}
  Status SaveTerm();

  storage::LogStore* store_;
  std::string snapshot_dir_;
  uint64_t term_ = 0;
  uint64_t commit_index_ = 0;
  uint64_t next_index_ = 1;
  bool owes_term_ = false;  // term_ is not yet on disk
  std::vector<storage::LogEntry> unsynced_;
  std::vector<std::string> ready_reads_;
};

}  // namespace gpool::log
