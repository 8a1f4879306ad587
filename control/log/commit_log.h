// CommitLog: the seam between the coordinator and replication.
//
// The coordinator proposes encoded commands and applies whatever the log says
// is committed, in order. LocalLog (one replica, commit = fsync) and RaftLog
// (control/replication/raft_log.h: a majority of replicas, commit = fsynced on
// a quorum) implement it; neither the state machine nor the components that
// propose know which one runs. term() is the leader epoch that fences workers.
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

// A state-machine image and the last log position it covers.
struct StateSnapshot {
  uint64_t index = 0;
  uint64_t term = 0;
  std::string data;  // ClusterState::Snapshot() bytes
};

// What the state machine must take in, in this order: the entries with an
// index below snapshot->index, then the snapshot (which replaces the whole
// state), then the remaining entries. Entry data is the command exactly as
// proposed; entry term is the term it was proposed in, so a caller can tell
// whether an entry at an index it proposed is still its own proposal.
struct Committed {
  std::optional<StateSnapshot> snapshot;
  std::vector<storage::LogEntry> entries;

  bool empty() const { return !snapshot && entries.empty(); }
};

class CommitLog {
 public:
  virtual ~CommitLog() = default;

  // What to rebuild the state machine from at startup: the latest durable
  // snapshot and the entries known to be committed after it. Called once,
  // right after the log is opened and before anything else.
  virtual Result<Committed> Recover() = 0;

  // Queues a command; returns the index it will have once committed.
  // NotLeader on a replica that is not the leader (the message names it).
  virtual Result<uint64_t> Propose(std::string data) = 0;
  // Makes queued proposals durable and does whatever else is due (RaftLog:
  // sends messages); returns what was committed since the last call.
  // Nothing is committed before it is durable.
  virtual Result<Committed> Sync() = 0;
  // Whether Sync() has work to do now.
  virtual bool HasUnsynced() const = 0;
  virtual bool IsLeader() const = 0;
  // A leader whose caller has applied an entry of the leader's own term, so
  // everything committed before the term is in the state machine (Raft
  // thesis 6.4). Only then may the leader answer reads or act on its state.
  virtual bool LeaderCaughtUp() const { return IsLeader(); }
  virtual uint64_t term() const = 0;
  virtual uint64_t commit_index() const = 0;
  // The state machine has reached `index` and serialised itself as `data`:
  // replaces the log up to `index` with it.
  virtual Status SaveSnapshot(uint64_t index, std::string_view data) = 0;
};

}  // namespace gpool::log
