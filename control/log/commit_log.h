// CommitLog: the seam between the coordinator and replication.
//
// The coordinator proposes encoded commands and applies whatever the log says
// is committed, in order. LocalLog (one replica, commit = fsync) implements it
// now; a Raft-backed log replaces it without touching the state machine or the
// components that propose. term() is the leader epoch that fences workers.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "storage/log_store.h"

namespace gpool::log {

class CommitLog {
 public:
  virtual ~CommitLog() = default;
  // Queues a command; returns the index it will have once committed.
  virtual Result<uint64_t> Propose(std::string data) = 0;
  // Makes queued proposals durable; returns the entries committed since the
  // last call, in index order. Nothing is committed before it is durable.
  virtual Result<std::vector<storage::LogEntry>> Sync() = 0;
  virtual bool HasUnsynced() const = 0;
  virtual bool IsLeader() const = 0;
  virtual uint64_t term() const = 0;
  virtual uint64_t commit_index() const = 0;
  // Replaces the log up to `index` with a state-machine snapshot.
  virtual Status SaveSnapshot(uint64_t index, std::string_view data) = 0;
};

}  // namespace gpool::log
