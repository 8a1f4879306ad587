// Raft: the consensus core, a pure state machine in the shape of etcd-io/raft.
//
// Inputs are Tick() (one unit of logical time), Step(message) and the client
// calls (Propose, ProposeConfChange, TransferLeadership, ReadIndex, Compact).
// Outputs accumulate inside: the log (RaftLog, with its unstable tail), the
// hard state, outgoing messages and finished reads; RawNode (raw_node.h)
// packages them as a Ready for the actor that persists, sends and applies.
// Nothing here touches a clock, a socket, a file or a thread; the election
// jitter comes from a generator seeded by Config::seed.
//
// Each role has its step function (StepLeader, StepCandidate, StepFollower);
// Step() first applies the rules common to all roles: term comparison, vote
// requests, and the term-less ReadIndex messages.
//
// Protocol features: leader election with randomized timeouts and pre-vote;
// check-quorum with a leader lease that makes followers ignore disruptive
// vote requests; log replication with batching, pipelining (optimistic next
// index bounded by an in-flight window) and fast backtracking by conflict
// term; commitment of current-term entries only (the new leader's empty
// entry); snapshots (InstallSnapshot to a follower whose next entry was
// compacted); leader transfer (TimeoutNow); ReadIndex reads, confirmed by a
// heartbeat round and forwarded from followers; and single-server membership
// changes that take effect when appended, one at a time, with a removed
// leader stepping down once its removal commits.
//
// Errors: client calls return NotLeader (message names the known leader),
// Unavailable (a leader transfer is in progress), FailedPrecondition (a
// configuration change is pending) or InvalidArgument. Step() returns
// InvalidArgument for a malformed message and Internal when a message would
// break a Raft invariant (e.g. overwrite a committed entry): that means a bug
// or a faulty peer, and the state is left unchanged where possible.
//
// Ownership: RawNode owns the Raft; the Raft owns its log and messages.
// Thread-safety: none; one thread drives it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "control/raft/config.h"
#include "control/raft/entry_log.h"
#include "control/raft/messages.h"
#include "control/raft/progress.h"
#include "control/raft/read_only.h"
#include "control/raft/state.h"
#include "protocol/model/users.h"
#include "storage/log_types.h"

namespace gpool::raft {

using storage::HardState;

// The durable state a node restarts from (what the actor loads from its
// LogStore). All-empty means a brand-new node.
struct InitialState {
  HardState hard_state;
  // The latest durable snapshot (index 0 = none). Its conf must be the
  // configuration in force at its index; its data is what the leader sends
  // to followers that need it.
  Snapshot snapshot;
  std::vector<LogEntry> entries;  // durable entries after snapshot.index, contiguous
  // The highest index the application has already applied (at least
  // snapshot.index); committed entries after it come out in Ready again.
  uint64_t applied = 0;
};

class Raft {
 public:
  static Result<std::unique_ptr<Raft>> Create(const Config& config, InitialState state);

  Raft(const Raft&) = delete;
  Raft& operator=(const Raft&) = delete;

  void Tick();
  // Ticks until the next tick that does something on its own: a follower's
  // or candidate's election, a leader's heartbeat. Lets the caller sleep
  // exactly that long instead of waking every tick. A large number when
  // nothing is due (a node outside the configuration).
  int TicksUntilDue() const;
  Status Step(const Message& m);

  // Appends a command; returns the index it will have if it commits.
  Result<uint64_t> Propose(std::string_view payload);
  // Appends a configuration change (one voter added or removed). At most one
  // may be uncommitted, and a new leader must first commit its empty entry.
  Result<uint64_t> ProposeConfChange(const ConfChange& change);
  // Hands leadership to `to`: once `to` has the whole log it gets TimeoutNow
  // and starts an election at once. Proposals are refused meanwhile; the
  // transfer is abandoned after an election timeout.
  Status TransferLeadership(uint64_t to);
  // Starts a linearizable read; its ReadState comes out once confirmed.
  Status ReadIndex(std::string context);
  // Starts an election now (tests, or an operator nudging a cluster).
  Status Campaign();
  // The application snapshotted its state at `index` (<= applied): drop the
  // log up to there. Returns the snapshot record to persist.
  Result<Snapshot> Compact(uint64_t index, std::string data);
  std::vector<LogEntry> TakeCompacted() { return log_.TakeCompacted(); }

  uint64_t id() const { return id_; }
  uint64_t term() const { return term_; }
  uint64_t lead() const { return lead_; }
  Role role() const { return role_; }
  SoftState soft_state() const { return {lead_, role_}; }
  HardState hard_state() const { return {term_, vote_, log_.committed()}; }
  NodeInfo info() const;
  const RaftLog& log() const { return log_; }
  const Config& config() const { return cfg_; }
  RaftLog& mutable_log() { return log_; }

  bool HasMessages() const { return !msgs_.empty(); }
  std::vector<Message> TakeMessages();
  bool HasReadStates() const { return !read_states_.empty(); }
  std::vector<ReadState> TakeReadStates();

 private:
  enum class ElectionKind { kPreElection, kElection };
  enum class VoteResult { kPending, kWon, kLost };

  Raft(const Config& config, RaftLog log);

  // Role transitions.
  void Reset(uint64_t term);
  void BecomeFollower(uint64_t term, uint64_t lead);
  void BecomePreCandidate();
  void BecomeCandidate();
  void BecomeLeader();
  bool Promotable() const;
  void StartElection(ElectionKind kind, bool transfer);
  VoteResult Poll(uint64_t from, bool granted);

  // Ticks.
  void TickElection();
  void TickHeartbeat();
  bool QuorumActive() const;

  // Step functions.
  Status StepLeader(const Message& m);
  Status StepCandidate(const Message& m);
  Status StepFollower(const Message& m);
  Status HandleVoteRequest(const Message& m);
  Status HandleAppend(const Message& m);
  Status HandleHeartbeat(const Message& m);
  Status HandleSnapshot(const Message& m);
  Status HandleAppendResponse(const Message& m);
  Status HandleHeartbeatResponse(const Message& m);
  Status StepReadIndexMessage(const Message& m);
  Status ValidateMessage(const Message& m) const;
  bool FromOutsider(const Message& m) const;
  bool InLeaderLease() const;
  bool AnswerFromVoter(uint64_t from) const;

  // Leader replication.
  Status AppendEntries(std::vector<LogEntry> entries);
  bool SendAppend(uint64_t to, bool allow_empty);
  bool SendSnapshot(uint64_t to, Progress& pr);
  void BcastAppend();
  void BcastHeartbeat(const std::string& context);
  bool MaybeCommit();
  void OnCommitted();
  Status CheckCanPropose() const;
  // ResourceExhausted when `bytes` more would pass max_uncommitted_bytes.
  Status CheckUncommitted(uint64_t bytes);
  void StepDownAfterRemoval();

  // Configuration.
  const ConfState& conf() const { return log_.conf().Latest(); }
  size_t Quorum() const { return conf().voters.size() / 2 + 1; }
  void OnLogChanged();
  void SyncProgress();

  // ReadIndex.
  void HandleReadIndexRequest(uint64_t from, std::string context);
  void HandleReadAck(uint64_t from, const std::string& context);
  void RespondToRead(uint64_t from, uint64_t index, std::string context);
  bool CommittedInCurrentTerm() const;

  void Send(Message m);
  void ResetRandomizedElectionTimeout();
  std::string LeaderHint() const;

  const Config cfg_;
  const uint64_t id_;
  std::mt19937_64 rng_;

  uint64_t term_ = 0;
  uint64_t vote_ = 0;
  uint64_t lead_ = 0;
  Role role_ = Role::kFollower;
  RaftLog log_;
  uint64_t seen_conf_version_ = 0;

  int election_elapsed_ = 0;   // ticks since the last election timeout reset
  int heartbeat_elapsed_ = 0;  // leader: ticks since the last heartbeat
  int randomized_election_timeout_ = 0;

  std::map<uint64_t, bool> votes_;       // candidate: who answered and how
  // Leader: one per voter, and one per removed node until its removal commits.
  std::map<uint64_t, Progress> prs_;
  uint64_t lead_transferee_ = 0;         // leader: transfer target, 0 = none
  uint64_t pending_conf_index_ = 0;      // leader: no new change until this commits
  // Leader: its own proposals not known committed yet (index, payload
  // bytes), oldest first, and their sum: max_uncommitted_bytes' account.
  std::deque<std::pair<uint64_t, uint64_t>> uncommitted_;
  uint64_t uncommitted_bytes_ = 0;

  ReadOnly read_only_;                   // leader: reads awaiting a heartbeat quorum
  struct PendingRead {
    uint64_t from;
    std::string context;
  };
  std::vector<PendingRead> pending_reads_;  // leader: reads waiting for a current-term commit

  std::vector<Message> msgs_;
  std::vector<ReadState> read_states_;
  uint64_t dropped_messages_ = 0;
};

}  // namespace gpool::raft
