// RaftLog: a CommitLog replicated by Raft across the coordinator replicas.
//
// It is the actor around the pure Raft core (control/raft/raw_node.h): it
// restarts the core from the LogStore, feeds it peer frames and clock ticks,
// and works off each Ready in the order Raft requires (ready.h):
//   1. persist: a received snapshot (LogStore::SaveSnapshot), then the new
//      entries and hard state in ONE LogStore::Save (synced when entries,
//      term or vote changed; a commit-index-only change is not worth an fsync
//      because a restart recomputes it),
//   2. send the messages (a vote or an append acknowledgement never leaves
//      before the state it promises is durable; a leader, whose only
//      promise is its own log, sends appends before its fsync so the
//      followers write in parallel, and counts itself toward a commit only
//      once a later Ready shows its entries durable),
//   3. hand the snapshot and the committed entries to the caller,
//   4. Advance the core.
// An entry is therefore committed only once it is fsynced on a majority of
// replicas, and the coordinator applies it only then.
//
// Entry data: the core tags entries (control/raft/entry.h); Sync() hands out
// only normal entries, with the tag removed, so the caller sees exactly the
// bytes it proposed. The new leader's empty entries and configuration
// entries are Raft's own business and are skipped (the index sequence the
// caller sees therefore has gaps).
//
// Epochs: term() is the Raft term. A leader's commands carry it and workers
// refuse older ones, so a deposed leader cannot start or stop tasks.
//
// Snapshots: SaveSnapshot(index, image) compacts the core's log (so a
// lagging or new follower is sent InstallSnapshot) and stores the image
// together with the voters at that index (stored_snapshot.h). A follower that
// receives a snapshot hands it out from Sync() to replace its state.
// With a snapshot_dir (issue 49), SaveSnapshotFile keeps the image as a file
// there instead (image_file.h): the loop links the fsynced file and stores a
// small reference, at a cost independent of the image's size; the core's
// snapshot is that reference, a lagging follower is sent the file in chunks
// (snapshot_transfer.h), and the follower reads its received file once, on its
// loop, to restore. Open() reads and checks the referenced file (a missing or
// altered one is a typed error naming it) and removes image files nothing
// references.
//
// Garbage from the network (frames that do not decode, messages addressed to
// another replica, messages the core refuses) is dropped and counted; it
// never stops the replica.
//
// A replica restarted with an empty data dir (same id, log lost) refuses
// the leader's heartbeats and appends at the index it acknowledged before;
// the core then probes it from its real end and it catches up by appends or
// by snapshot (control/raft/lost_log_test.cc). Safety caveat: entries that
// only that replica and a leader held could be lost with its disk, as in any
// Raft; prefer replacing a lost replica while the others are healthy.
//
// Ownership: the caller owns the LogStore and the PeerTransport and keeps
// them alive longer than the RaftLog. Thread-safety: none; the coordinator's
// loop thread owns it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <unordered_map>
#include <vector>

#include "control/log/commit_log.h"
#include "control/log/image_file_log.h"
#include "control/raft/raw_node.h"
#include "control/replication/membership_guard.h"
#include "control/replication/peer_transport.h"
#include "control/replication/replica_directory.h"
#include "control/replication/snapshot_transfer.h"
#include "protocol/base/clock.h"
#include "protocol/model/users.h"
#include "protocol/wire.h"
#include "storage/log_store.h"

namespace gpool::replication {

struct RaftLogOptions {
  uint64_t id = 0;                // this replica; nonzero and in `voters` unless `join`
  std::vector<uint64_t> voters;   // every replica of a new cluster, this one included
  // Start outside any configuration and wait for a running cluster to add
  // this replica (gpool admin replica add); `voters` is then ignored.
  bool join = false;
  // Where replicas listen, from the command line; the log and snapshots add
  // to it (replica_directory.h). RaftLog connects the transport to each.
  std::vector<ReplicaAddress> directory;
  // One Raft tick of wall time. A follower that hears no leader for
  // [election_ticks, 2 * election_ticks) ticks starts an election, so the
  // defaults detect a dead leader in 200-400 ms; the leader heartbeats every
  // heartbeat_ticks ticks (20 ms). Millisecond ticks give the randomized
  // timeout 200 distinct values (see MsUntilDue).
  int64_t tick_ms = 1;
  int election_ticks = 200;
  int heartbeat_ticks = 20;
  // After a stall (a long fsync, a paused process) at most this much time
  // is replayed at once: time runs slow for a stalled replica rather than
  // making it call an election before it has read what its peers sent.
  int64_t max_catchup_ms = 25;
  uint64_t seed = 0;              // election jitter; 0 = from the clock
  // Inbound frame limits: an inline snapshot (no snapshot_dir, or one
  // stored before issue 49) travels as one frame; a file's in 1 MiB chunks.
  size_t max_frame_bytes = 64 * 1024 * 1024;
  // Where snapshot image files live (the coordinator's data dir); empty:
  // images are kept inline in the LogStore, as before issue 49.
  std::string snapshot_dir;
  size_t snapshot_chunk_bytes = 1 << 20;
  // The state version this binary implements, sent on every message
  // (state::kStateVersion; the coordinator sets it). 0: none is sent, as a
  // replica from before versions were advertised (tests of upgrades).
  uint32_t state_version = 0;
  const Clock* clock = &SystemClock::Get();
};

struct RaftLogStats {
  uint64_t frames_received = 0;
  uint64_t frames_malformed = 0;     // did not decode as a raft::Message
  uint64_t frames_misaddressed = 0;  // addressed to another replica
  uint64_t frames_impersonated = 0;  // `from` is not the replica the connection authenticated as
  uint64_t responses_coalesced = 0;
  uint64_t appends_merged = 0;       // appends merged into the previous one to the same replica  // accepting append responses a later one in the same Ready covered
  uint64_t step_errors = 0;          // the core refused the message
  uint64_t readies = 0;
  uint64_t synced_writes = 0;
  uint64_t snapshots_installed = 0;
  uint64_t leader_changes = 0;
};

// A configuration change that committed, as the coordinator learns of it.
struct CommittedConfChange {
  uint64_t index = 0;
  uint64_t term = 0;
  raft::ConfChange change;
  std::vector<uint64_t> voters;  // the configuration it put in force
  std::vector<uint64_t> learners;
};

// One replica as this one sees it, for status pages.
struct ReplicaProgress {
  uint64_t id = 0;
  std::string role;    // "leader", "follower", "learner", or "unknown" when this replica is not the leader
  uint64_t match = 0;  // last index known to be replicated there (leader only)
};

// A follower that took several appends in one turn answers each; an
// accepting answer says "I match up to index", so only the highest one of a
// term to a leader carries news (the leader frees every window slot up to
// it, Progress::inflights.FreeLE). Drops the accepting append responses a
// later one to the same replica in the same term covers, keeping the order
// of the rest, and returns how many it dropped: each would have cost a frame
// and, with CurveZMQ, an encryption.
size_t DropCoveredAppendResponses(std::vector<raft::Message>& messages);

// A leader proposing many entries in one turn broadcasts an append per
// proposal: one frame (and, with CurveZMQ, one encryption) per entry per
// follower. Merges each append into the previous message to the same
// replica when that is an append of the same term whose entries it
// continues exactly (its `index` is the other's last entry, its `log_term`
// that entry's term), up to `max_entries` and `max_bytes` (LogEntry::
// ByteSize) per message; the merged one carries the higher commit. Returns
// how many it merged away. The follower applies the merged append as it
// would the two; the leader's window frees both on the one answer.
size_t MergeContiguousAppends(std::vector<raft::Message>& messages, uint64_t max_entries, uint64_t max_bytes);
inline constexpr uint64_t kMaxMergedEntries = 1024;
inline constexpr uint64_t kMaxMergedBytes = 1 << 20;

// A role as replication reports and logs spell it: "leader", "follower", ...
std::string RoleText(raft::Role role);

class RaftLog final : public log::CommitLog, public log::ImageFileLog {
 public:
  static Result<std::unique_ptr<RaftLog>> Open(const RaftLogOptions& options, storage::LogStore* store,
                                               PeerTransport* transport);

  // CommitLog.
  Result<log::Committed> Recover() override;
  Result<uint64_t> Propose(std::string data) override;
  Result<log::Committed> Sync() override;
  // False while a write error waits for ResumeWrites(): Sync() would do nothing.
  bool HasUnsynced() const override { return write_error_.ok() && (held_.has_value() || node_->HasReady()); }
  bool IsLeader() const override { return node_->soft_state().role == raft::Role::kLeader; }
  bool LeaderCaughtUp() const override {
    return IsLeader() && node_->log().Term(node_->log().applied()) == term();
  }
  uint64_t term() const override { return node_->hard_state().term; }
  uint64_t commit_index() const override { return node_->hard_state().commit; }
  Status SaveSnapshot(uint64_t index, std::string_view data) override;
  // log::ImageFileLog.
  bool KeepsImageFiles() const override { return !options_.snapshot_dir.empty(); }
  Status SaveSnapshotFile(uint64_t index, const std::string& path, uint64_t bytes,
                          const std::string& sha256) override;
  // A Ready that could not be persisted is held, not sent, applied or
  // advanced past, and persisted again by the first Sync() after
  // ResumeWrites() (control/disk_full_mode.h).
  Status write_error() const override { return write_error_; }
  Status ResumeWrites() override;

  // Adds or removes one member (single-server change). The leader only; the
  // core refuses a second change while one is uncommitted, adding a member
  // twice (AlreadyExists) and removing a non-member or the last voter. The
  // log::MembershipChange form adds a learner (promoted by Tick once caught
  // up) and refuses a removal that would leave too few live voters.
  Result<uint64_t> ProposeMembership(raft::ConfChangeType type, const ReplicaAddress& address);
  Result<uint64_t> ProposeMembership(const log::MembershipChange& change) override;
  Status CheckNotMember(uint64_t replica_id) const override;
  // Configuration changes committed by the Sync() calls since the last call.
  std::vector<CommittedConfChange> TakeCommittedConfChanges() { return std::exchange(committed_changes_, {}); }
  std::vector<log::CommittedMembership> TakeCommittedMembership() override;
  // The directory names the rotated key (so snapshots carry it) and the
  // transport pins it, trying the previous one during its grace.
  void RotateReplicaKey(uint64_t id, const std::string& key, const std::string& previous_key,
                        int64_t previous_until_ms) override;
  const ReplicaDirectory& directory() const { return directory_; }
  // One frame from a peer (PeerTransport::Drain). `sender`: the replica its
  // connection authenticated as, or 0 (unauthenticated, not checked); a
  // frame whose `from` differs is dropped and counted.
  void Receive(std::string_view frame, uint64_t sender = 0);
  // Advances Raft time to the clock; call every loop turn.
  void Tick();
  // Receive() every frame the transport holds, then Tick().
  void Pump() override;
  // Milliseconds until Raft next has something to do on its own (an
  // election timeout, a heartbeat); at least 1. The loop sleeps no longer, so
  // an election starts on its randomized millisecond, not on the loop's
  // next 10 ms wake-up: two followers then rarely start together and split
  // the vote.
  int64_t MsUntilDue() const override;
  // Asks to become leader now (tests; an operator nudging the cluster).
  Status Campaign() { return node_->Campaign(); }
  // Starts a linearizable read (Raft's ReadIndex); `context` must be unique
  // across the cluster. Once confirmed, the context comes out of
  // TakeReadyReads() after the Sync() whose entries bring the state machine
  // up to the read's index. NotLeader when no leader is known.
  Status ReadIndex(std::string context) override { return node_->ReadIndex(std::move(context)); }
  // Reads that may be served now that the last Sync()'s output is applied.
  std::vector<std::string> TakeReadyReads() override { return std::exchange(ready_reads_, {}); }
  uint64_t replica_id() const override { return options_.id; }
  std::string LeaderClientAddress() const override;
  std::string LeaderWorkerAddress() const override;
  uint64_t leader_id() const override { return leader(); }
  uint64_t HandOverLeadership() override;
  log::ReplicationReport Report() const override;
  log::StateVersionFloor LowestStateVersion() const override;
  uint64_t id() const { return options_.id; }
  uint64_t leader() const { return node_->soft_state().lead; }
  raft::Role role() const { return node_->soft_state().role; }
  uint64_t applied_index() const { return node_->log().applied(); }
  std::vector<ReplicaProgress> Replicas() const;
  raft::NodeInfo info() const { return node_->info(); }
  const RaftLogStats& stats() const { return stats_; }
  // How many other replicas' liveness and state version are remembered: at
  // most the members and the directory's, whatever ids frames claim.
  size_t remembered_peers() const { return std::max(guard_.tracked(), peer_state_versions_.size()); }
  // Null without a snapshot_dir.
  const SnapshotSender* snapshot_sender() const { return sender_.get(); }
  const SnapshotReceiver* snapshot_receiver() const { return receiver_.get(); }

 private:
  // Deletes a bounded run of the entries the last snapshot covers (Pump).
  void TrimCompacted();
  bool trim_warned_ = false;
  RaftLog(const RaftLogOptions& options, storage::LogStore* store, PeerTransport* transport);
  Status Persist(const raft::Ready& rd);
  void Send(std::vector<raft::Message>& messages);
  Status Collect(const raft::Ready& rd, log::Committed& out);
  // Keeps the directory and the transport in step with the configuration: an
  // added replica is reachable once its entry is in the log (the leader must
  // replicate to it before it commits); a removed one is dropped only once
  // its removal commits (an uncommitted removal may still be overwritten).
  Status Learn(const raft::LogEntry& entry, bool committed);
  Status LearnDirectory(const std::vector<ReplicaAddress>& replicas);
  Status Connect(const ReplicaAddress& address);
  // The state of a snapshot image: inline, or read (and checked) from its file.
  Result<std::string> ImageState(SnapshotImage& image) const;
  // A kSnapshot the core emitted: to the chunked sender when its image is a
  // file. False: send it as it is.
  bool SendAsChunks(const raft::Message& m);
  void ReceiveChunk(const raft::Message& chunk);

  RaftLogOptions options_;
  storage::LogStore* store_;
  PeerTransport* transport_;
  wire::DecodeLimits limits_;
  std::unique_ptr<raft::RawNode> node_;
  log::Committed recovered_;
  int64_t last_tick_ms_ = 0;
  raft::SoftState soft_;
  std::vector<std::string> ready_reads_;
  ReplicaDirectory directory_;
  std::vector<CommittedConfChange> committed_changes_;
  RaftLogStats stats_;
  // The Ready whose persistence failed, waiting for the disk; whether its
  // messages already went out (a leader's early appends).
  std::optional<raft::Ready> held_;
  bool held_sent_early_ = false;
  Status write_error_;
  // Judges replica changes and promotes caught-up learners (leader only).
  MembershipGuard guard_;
  // The state version each peer last sent (0: it sends none, an older
  // binary); a peer not in the map has not been heard from.
  std::unordered_map<uint64_t, uint32_t> peer_state_versions_;
  std::unique_ptr<SnapshotSender> sender_;
  std::unique_ptr<SnapshotReceiver> receiver_;
  void MaybePromoteLearner();
};

}  // namespace gpool::replication
