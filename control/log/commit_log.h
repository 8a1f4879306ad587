// CommitLog: the whole seam between the coordinator and replication.
//
// The coordinator proposes encoded commands and applies whatever the log says
// is committed, in order. LocalLog (one replica, commit = fsync) and RaftLog
// (control/replication/raft_log.h: a majority of replicas, commit = fsynced on
// a quorum) implement it; neither the state machine, the proposal tracker nor
// the components that propose know which one runs. term() is the leader epoch
// that fences workers.
//
// Besides proposals, everything the coordinator needs to know about the
// replica set goes through here: linearizable reads (ReadIndex), membership
// changes, where the leader is, and a status report. LocalLog implements each
// trivially: its reads are current at once, it is always the leader, and its
// replica set cannot change.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <climits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/disk_guard.h"
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

// A replica to add (its addresses) or remove, as the client asked.
// An added replica joins as a learner and is promoted to voter once caught
// up (replication/membership_guard.h).
struct MembershipChange {
  bool add = true;  // false: remove
  uint64_t replica_id = 0;
  std::string peer_address;
  std::string client_address;
  std::string worker_address;
  bool force = false;  // remove even if fewer live voters than a quorum would remain
  std::string public_key;  // add: the replica's CurveZMQ key (Z85); empty on an insecure cluster
};

// A membership change that committed.
struct CommittedMembership {
  uint64_t index = 0;
  uint64_t term = 0;
  bool add = true;                 // added (as a learner) or promoted; false: removed
  uint64_t replica_id = 0;
  std::vector<uint64_t> voters;    // the configuration it put in force
  std::vector<uint64_t> learners;
};

// One replica as this one sees it, for status reports.
struct ReplicaReport {
  uint64_t id = 0;
  std::string client_address;  // empty: unknown
  std::string role;            // "leader", "follower", "candidate", "precandidate" or "unknown"
  uint64_t match = 0;          // last index known to be replicated there
  int64_t heard_ms_ago = -1;   // leader only: since its last message; -1 never / unknown
  uint32_t state_version = 0;  // the state version it last said it runs; 0 unknown (older, or not heard)
  std::string key;             // its CurveZMQ public key as this replica knows it; empty: none
};

// The lowest state version among the replicas that apply the log (issue 50:
// rolling upgrades; control/state/state_version.h), as the leader heard them.
struct StateVersionFloor {
  uint32_t version = 0;  // 0: no other replica (a single one): nothing below this binary
  uint64_t replica = 0;  // the replica at the floor (0: none below this one)
  bool heard = true;     // false: not heard from since this replica started (counted as oldest)
};

// What this replica knows of replication, for ClusterStatus.
struct ReplicationReport {
  bool replicated = false;     // false: a single replica that always leads
  uint64_t self_id = 0;        // this replica's id in `replicas`
  std::string role;            // this replica's Raft role: "leader", "follower", "candidate", ...
  bool voter = true;           // this replica votes (false: a learner, or outside the configuration)
  uint64_t leader_id = 0;      // the leader this replica knows; 0: none (replicated mode only)
  uint64_t term = 0;
  uint64_t commit_index = 0;
  uint64_t applied_index = 0;  // log position applied, Raft's own entries included
  std::vector<ReplicaReport> replicas;  // empty for a single replica
  DiskReport disk;             // this replica's data dir: full (refusing writes) or not
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

  // A full disk (docs/operations.md, "A full disk"). A Sync() whose write
  // fails either fails (LocalLog: its queued proposals were not committed
  // and are dropped) or keeps what it could not persist and reports it here
  // (RaftLog: the Ready waits, unsent and unapplied, to be persisted again).
  // Either way the coordinator stops calling Sync() until its data dir takes
  // writes again, reopens the store, and calls ResumeWrites(), which brings
  // the log back in step with what the disk holds; Ok: Sync() may go on.
  virtual Status write_error() const { return Status::Ok(); }
  virtual Status ResumeWrites() { return Status::Ok(); }

  // Replication's own work, once per loop turn: take in what peers sent and
  // advance its clock (elections, heartbeats). Nothing for a single replica.
  virtual void Pump() {}
  // Milliseconds until Pump() has work of its own to do; the loop sleeps no
  // longer. 0: committed entries wait to be applied (a backlog handed over
  // in slices), so the loop should not sleep at all.
  virtual int64_t MsUntilDue() const { return INT64_MAX; }

  // Starts a linearizable read (Raft's ReadIndex); `context` is unique across
  // the cluster. Once the read may be served, its context comes out of
  // TakeReadyReads() (for a single replica: at once). NotLeader when this
  // replica cannot confirm its leadership.
  virtual Status ReadIndex(std::string context) = 0;
  virtual std::vector<std::string> TakeReadyReads() = 0;

  // Proposes adding or removing one replica (single-server change); returns
  // the index of its entry. FailedPrecondition on a single replica.
  virtual Result<uint64_t> ProposeMembership(const MembershipChange& change) = 0;
  // AlreadyExists when `replica_id` is already a voter or learner of the
  // latest configuration. An add checks it before anything slower or less
  // specific (the peer probe, the key check), so the answer is the one
  // docs/protocol.md 7.8 promises. OK on a single replica.
  virtual Status CheckNotMember(uint64_t /*replica_id*/) const { return Status::Ok(); }
  // Membership changes committed by the Sync() calls since the last call.
  virtual std::vector<CommittedMembership> TakeCommittedMembership() { return {}; }
  // Issue 48: replica `id`'s key was rotated to `key` (a committed
  // state::ReplicaKeyCmd); `previous_key` is still tried as its server key
  // until wall time previous_until_ms. Replicated logs only; a replica this
  // one does not know, or whose key is neither, is left alone.
  virtual void RotateReplicaKey(uint64_t id, const std::string& key, const std::string& previous_key,
                                int64_t previous_until_ms) {
    (void)id;
    (void)key;
    (void)previous_key;
    (void)previous_until_ms;
  }
  // This replica's id in the replica set; 0 for a single replica.
  virtual uint64_t replica_id() const { return 0; }

  // The current leader's client and worker endpoints, for NotLeader
  // redirects; empty while none is known or this replica is the leader.
  virtual std::string LeaderClientAddress() const { return {}; }
  virtual std::string LeaderWorkerAddress() const { return {}; }
  // The leader's replica id, 0 if none is known; for logs.
  virtual uint64_t leader_id() const { return 0; }
  // A clean stop (SIGTERM) of the leader: asks the voter that holds the most
  // of the log to take over at once (Raft's TimeoutNow), so the others need
  // not wait out an election timeout. Returns the replica asked; 0 when there
  // is none (not the leader, a single replica, no live voter to hand to).
  virtual uint64_t HandOverLeadership() { return 0; }
  virtual ReplicationReport Report() const = 0;
  // The leader's view of the replicas' state versions: the lowest one any
  // replica applying the log (voter or learner) runs, this one included.
  // A replica not heard from counts as the oldest. The default: a single
  // replica, no floor.
  virtual StateVersionFloor LowestStateVersion() const { return {}; }
};

}  // namespace gpool::log
