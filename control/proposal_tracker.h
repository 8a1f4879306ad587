// ProposalTracker: the coordinator's Proposer over a CommitLog.
//
// It remembers who waits for what: a callback per proposed command (by log
// index and term), a waiter per membership change, and the linearizable reads
// waiting for a ReadIndex confirmation, batched into one ReadIndex per loop
// turn. It also decides whether this replica serves (leading()): it is the
// leader and has applied an entry of its own term.
//
// The coordinator drives it: IssueReads() before syncing the log, Settle()
// for every entry it applies, AfterSync() after each Sync(), and
// FollowLeadership() once per turn, which fails every waiter that can no
// longer be answered truthfully (their clients retry with the same
// idempotency key) and tells the coordinator to reset its components.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "control/disk_full_mode.h"
#include "control/log/commit_log.h"
#include "control/metrics/metric_sets.h"
#include "control/ports.h"
#include "control/replication/peer_probe.h"
#include "protocol/base/clock.h"
#include "protocol/messages_admin.h"

namespace gpool::control {

struct ProposalTrackerOptions {
  // A read whose confirmation was lost (a dropped heartbeat answer) fails
  // after this long; the client has long retried by then.
  int64_t read_timeout_ms = 5000;
  const Clock* clock = &SystemClock::Get();
  // When set, a leader whose data dir refuses writes refuses proposals and
  // membership changes with its typed error (disk_full_mode.h), and
  // Replication() reports the condition. Null: always writable.
  DiskFullMode* disk = nullptr;
  // How long an added replica's peer address has to answer.
  int64_t peer_probe_timeout_ms = 3000;
  // CurveZMQ: a replica is added only with its public key (the peers admit
  // and authenticate it by that key).
  bool replica_keys_required = false;
  // Commit latencies, commits and leadership changes for /metrics; null: not kept.
  ReplicationMetrics* metrics = nullptr;
};

class ProposalTracker final : public Proposer {
 public:
  ProposalTracker(const ProposalTrackerOptions& options, log::CommitLog& log);

  // Proposer
  void Propose(state::CommandBody body, ApplyCallback done) override;
  // Only the leader stamps its term: a follower's replies must not raise the
  // epoch a worker fences with.
  uint64_t epoch() const override { return log_.IsLeader() ? log_.term() : 0; }
  bool leading() const override { return leading_; }
  Status Admissible(const state::CommandBody& body) const override { return CheckStateVersion(body); }
  std::string leader_client_address() const override;
  std::string leader_worker_address() const override;
  void ReadBarrier(ReadCallback done) override;
  void ChangeMembership(const ChangeReplicas& request, MembershipCallback done) override;
  log::ReplicationReport Replication() const override;

  // Starts one ReadIndex for every read that arrived since the last call.
  void IssueReads();
  // After each Sync() and the apply of what it returned: serves the reads
  // now current and answers committed membership changes.
  void AfterSync();
  // The entry at `index`, proposed in `term`, applied with `result`: runs
  // its callback (or fails it when another leader's entry took the index).
  void Settle(uint64_t index, uint64_t term, const state::ApplyResult& result);
  // Fails every proposal callback with `why` (the log could not persist).
  void FailProposals(const Status& why);
  // Fails reads waiting longer than the read timeout.
  void ExpireReads(int64_t now_ms);
  // Re-reads leadership from the log. True when it changed (started or
  // stopped serving, or a new term): every waiter of the old leadership has
  // been failed and the caller resets its components.
  bool FollowLeadership();
  // True once this replica's own removal from the replica set has committed.
  bool removed() const { return removed_; }

 private:
  // A waiter remembers its term to tell our entry from another leader's
  // entry at the same index.
  struct Pending {
    uint64_t term = 0;
    int64_t proposed_ms = 0;  // monotonic, for the commit latency
    ApplyCallback done;
  };
  struct PendingMembership {
    uint64_t term = 0;
    MembershipCallback done;
  };
  struct ProbingAdd {
    replication::PeerProbe probe;
    log::MembershipChange change;
    MembershipCallback done;
  };
  struct ReadBatch {
    int64_t issued_ms = 0;
    std::vector<ReadCallback> waiting;
  };

  void FailPending(const Status& why, uint64_t keep_term);
  void FailReads(const Status& why);
  void FailMembership(const Status& why);
  void ProposeMembership(const log::MembershipChange& change, MembershipCallback done);
  void ProposeProbedAdds();
  Status NotLeader() const;

  ProposalTrackerOptions options_;
  // FailedPrecondition when a replica applying the log runs a state version
  // older than `body` needs (control/state/state_version.h): it would apply
  // it differently and its state would part from the others' for good.
  Status CheckStateVersion(const state::CommandBody& body) const;

  log::CommitLog& log_;
  std::map<uint64_t, Pending> callbacks_;                    // by log index
  std::map<uint64_t, PendingMembership> membership_waiters_;  // by log index
  std::vector<ProbingAdd> probing_;                           // adds waiting for their address to answer
  std::vector<ReadCallback> unissued_reads_;
  std::map<std::string, ReadBatch> reads_;  // ReadIndex context -> reads waiting for it
  uint64_t next_read_ = 0;
  bool leading_ = false;
  uint64_t leading_term_ = 0;
  bool removed_ = false;
};

}  // namespace gpool::control
