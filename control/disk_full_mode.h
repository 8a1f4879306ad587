// DiskFullMode: the coordinator's side of a data dir that refuses writes
// (docs/operations.md, "A full disk"). A full disk is a mode, not a crash:
//   - entering: a proposal or a log write finds free space at or below the
//     reserve, or a write to the store fails (any I/O error), or the store
//     could only be opened as a read-only copy in memory at start-up;
//   - in the mode: proposals are refused with Unavailable "disk full (<path>,
//     <free> bytes free)", the log writes nothing (no Sync, no snapshot), and
//     reads and ClusterStatus are served from the state in memory. A Raft
//     leader stops sending too, so the others elect a leader that can write
//     and this one steps down; RaftLog keeps the Ready it could not persist;
//   - leaving: once per retry interval, when free space is above the reserve
//     and a probe write succeeds, the store is reopened (LevelDB refuses
//     every write after a failed one until it is), the LogStore re-reads what
//     the disk holds, and the log resumes (CommitLog::ResumeWrites). Only then
//     are writes accepted again; a failure on the way stays in the mode.
// It logs when the mode begins, at most once per log interval while it
// lasts, and when it ends.
//
// Ownership: the coordinator owns it, the store, the LogStore and the log,
// which outlive it. Thread-safety: none; the coordinator's loop thread.
#pragma once

#include <string>

#include "control/log/commit_log.h"
#include "protocol/base/disk_guard.h"
#include "storage/leveldb_store.h"
#include "storage/log_store.h"

namespace gpool::control {

class DiskFullMode {
 public:
  DiskFullMode(DiskGuardOptions options, storage::LevelDbStore& kv, storage::LogStore& store);

  // The log, once it is open (it is opened over the store after this).
  void Attach(log::CommitLog* log) { log_ = log; }
  // Before a proposal or a log write: Ok, or the refusal.
  Status CheckWrite();
  // A write failed: enters the mode and returns the refusal. `what` names
  // the write for the log line.
  Status WriteFailed(const Status& error, const std::string& what);
  bool full() const { return guard_.full(); }
  // Once per loop turn: logs while full and tries to resume when due.
  void Tick();
  DiskReport Report() const { return guard_.Report(); }

 private:
  void Entered(const std::string& what, const Status& error);

  DiskGuard guard_;
  storage::LevelDbStore& kv_;
  storage::LogStore& store_;
  log::CommitLog* log_ = nullptr;
};

}  // namespace gpool::control
