#include "control/proposal_tracker.h"

#include <spdlog/spdlog.h>

#include "protocol/security/keys.h"

#include "control/frames.h"
#include "protocol/messages_admin.h"
#include "control/state/command_versions.h"

namespace gpool::control {
namespace {

state::ApplyResult NotCommitted(const Status& why) {
  state::ApplyResult failed;
  failed.status = why;
  failed.committed = false;
  return failed;
}

}  // namespace

ProposalTracker::ProposalTracker(const ProposalTrackerOptions& options, log::CommitLog& log)
    : options_(options), log_(log) {}

Status ProposalTracker::NotLeader() const { return NotLeaderStatus(leader_client_address()); }

std::string ProposalTracker::leader_client_address() const {
  return leading_ ? std::string() : log_.LeaderClientAddress();
}

std::string ProposalTracker::leader_worker_address() const {
  return leading_ ? std::string() : log_.LeaderWorkerAddress();
}

log::ReplicationReport ProposalTracker::Replication() const {
  log::ReplicationReport report = log_.Report();
  if (options_.disk != nullptr) report.disk = options_.disk->Report();
  return report;
}

void ProposalTracker::Propose(state::CommandBody body, ApplyCallback done) {
  if (!leading_) return done(NotCommitted(NotLeader()));
  // A full disk: refused here, typed, rather than queued for a Sync that
  // cannot write (a single replica would otherwise fail it a turn later).
  if (options_.disk != nullptr) {
    if (Status refused = options_.disk->CheckWrite(); !refused.ok()) return done(NotCommitted(refused));
  }
  if (Status refused = CheckStateVersion(body); !refused.ok()) return done(NotCommitted(refused));
  state::Command command{options_.clock->WallMs(), std::move(body)};
  const uint64_t term = log_.term();
  auto index = log_.Propose(state::EncodeCommand(command));
  if (!index.ok()) {
    // Unavailable: a leadership transfer is under way. To a client that is
    // "not the leader, retry shortly", which it knows how to do.
    if (index.status().code() == StatusCode::kUnavailable) {
      return done(NotCommitted(Status::NotLeader("leadership is being handed to another replica; retry")));
    }
    return done(NotCommitted(index.status()));
  }
  callbacks_[*index] = Pending{term, options_.clock->MonoMs(), std::move(done)};
}

Status ProposalTracker::CheckStateVersion(const state::CommandBody& body) const {
  const state::StateVersionNeed need = state::StateVersionNeeded(body);
  if (need.version <= 1) return Status::Ok();
  const log::StateVersionFloor floor = log_.LowestStateVersion();
  if (floor.version == 0 || floor.version >= need.version) return Status::Ok();
  const std::string replica = "replica " + std::to_string(floor.replica);
  return Status::FailedPrecondition(
      need.what + " needs every replica at state version " + std::to_string(need.version) + " or later, and " +
      replica +
      (floor.heard ? " runs version " + std::to_string(floor.version) + " (an older gpool-coordinator)"
                   : " has not been heard from since this leader started (it may run an older gpool-coordinator)") +
      ", which would apply it differently; finish upgrading the replicas ('gpool admin replica list' shows each "
      "one's version) and retry");
}

void ProposalTracker::Settle(uint64_t index, uint64_t term, const state::ApplyResult& result) {
  auto it = callbacks_.find(index);
  if (it == callbacks_.end()) return;
  Pending pending = std::move(it->second);
  callbacks_.erase(it);
  // Another leader's entry took the index our proposal had.
  if (pending.term != term) return pending.done(NotCommitted(NotLeader()));
  if (options_.metrics != nullptr) {
    ++options_.metrics->commits;
    options_.metrics->commit_seconds.Observe(static_cast<double>(options_.clock->MonoMs() - pending.proposed_ms) /
                                             1000.0);
  }
  pending.done(result);
}

void ProposalTracker::FailProposals(const Status& why) { FailPending(why, /*keep_term=*/0); }

void ProposalTracker::FailPending(const Status& why, uint64_t keep_term) {
  for (auto it = callbacks_.begin(); it != callbacks_.end();) {
    if (keep_term != 0 && it->second.term == keep_term) {
      ++it;
      continue;
    }
    auto done = std::move(it->second.done);
    it = callbacks_.erase(it);
    done(NotCommitted(why));
  }
}

void ProposalTracker::ChangeMembership(const ChangeReplicas& request, MembershipCallback done) {
  if (!leading_) return done(NotLeader());
  if (options_.disk != nullptr) {
    if (Status refused = options_.disk->CheckWrite(); !refused.ok()) return done(refused);
  }
  if (request.op == ReplicaOp::kAdd) {
    if (Status member = log_.CheckNotMember(request.replica_id); !member.ok()) return done(member);
  }
  if (request.op == ReplicaOp::kAdd && (options_.replica_keys_required || !request.public_key.empty()) &&
      !security::IsZ85Key(request.public_key)) {
    return done(Status::InvalidArgument(
        "public_key: a CurveZMQ cluster adds a replica only with its 40-character Z85 public key "
        "(gpool admin replica add ... --replica-key FILE)"));
  }
  log::MembershipChange change{request.op == ReplicaOp::kAdd, request.replica_id, request.peer_address,
                              request.client_address, request.worker_address, request.force,
                              request.public_key};
  if (change.add && log_.replica_id() != 0) {
    // Only a replica whose peer address answers is added; the proposal
    // waits for the probe's verdict (ProposeProbedAdds, every loop turn).
    probing_.push_back(ProbingAdd{
        replication::PeerProbe(request.peer_address, options_.clock->MonoMs(), options_.peer_probe_timeout_ms),
        std::move(change), std::move(done)});
    return;
  }
  ProposeMembership(change, std::move(done));
}

void ProposalTracker::ProposeMembership(const log::MembershipChange& change, MembershipCallback done) {
  auto index = log_.ProposeMembership(change);
  if (!index.ok()) return done(index.status());
  membership_waiters_[*index] = PendingMembership{log_.term(), std::move(done)};
}

void ProposalTracker::ProposeProbedAdds() {
  const int64_t now = options_.clock->MonoMs();
  for (auto it = probing_.begin(); it != probing_.end();) {
    auto verdict = it->probe.Poll(now);
    if (!verdict.has_value()) {
      ++it;
      continue;
    }
    ProbingAdd add = std::move(*it);
    it = probing_.erase(it);
    if (!verdict->ok()) {
      add.done(Status::Unavailable("replica " + std::to_string(add.change.replica_id) + " not added: " +
                                   verdict->message() + "; start it with --join first; nothing was changed"));
    } else if (!leading_) {
      add.done(NotLeader());
    } else {
      ProposeMembership(add.change, std::move(add.done));
    }
  }
}

void ProposalTracker::FailMembership(const Status& why) {
  auto probing = std::move(probing_);
  probing_.clear();
  for (auto& add : probing) add.done(why);
  auto waiters = std::move(membership_waiters_);
  membership_waiters_.clear();
  for (auto& [index, waiter] : waiters) waiter.done(why);
}

void ProposalTracker::ReadBarrier(ReadCallback done) {
  if (!leading_) return done(NotLeader());
  unissued_reads_.push_back(std::move(done));
}

void ProposalTracker::IssueReads() {
  if (unissued_reads_.empty()) return;
  auto waiting = std::move(unissued_reads_);
  unissued_reads_.clear();
  std::string context = "r" + std::to_string(log_.replica_id()) + "-" + std::to_string(++next_read_);
  Status status = leading_ ? log_.ReadIndex(context) : NotLeader();
  if (!status.ok()) {
    for (auto& done : waiting) done(NotLeader());
    return;
  }
  reads_[std::move(context)] = ReadBatch{options_.clock->MonoMs(), std::move(waiting)};
}

void ProposalTracker::AfterSync() {
  ProposeProbedAdds();
  for (const auto& context : log_.TakeReadyReads()) {
    auto it = reads_.find(context);
    if (it == reads_.end()) continue;  // failed meanwhile, or another replica's
    auto waiting = std::move(it->second.waiting);
    reads_.erase(it);
    for (auto& done : waiting) done(Status::Ok());
  }
  for (auto& change : log_.TakeCommittedMembership()) {
    if (!change.add && change.replica_id == log_.replica_id()) {
      spdlog::warn("this replica was removed from the replica set index={}; it stops serving and exits",
                   change.index);
      removed_ = true;
    }
    auto it = membership_waiters_.find(change.index);
    if (it == membership_waiters_.end()) continue;
    PendingMembership waiter = std::move(it->second);
    membership_waiters_.erase(it);
    if (waiter.term != change.term) {
      waiter.done(NotLeader());
      continue;
    }
    waiter.done(ChangeReplicasReply{change.index, change.voters, change.learners});
  }
}

void ProposalTracker::FailReads(const Status& why) {
  auto unissued = std::move(unissued_reads_);
  unissued_reads_.clear();
  auto reads = std::move(reads_);
  reads_.clear();
  for (auto& done : unissued) done(why);
  for (auto& [context, batch] : reads) {
    for (auto& done : batch.waiting) done(why);
  }
}

void ProposalTracker::ExpireReads(int64_t now_ms) {
  for (auto it = reads_.begin(); it != reads_.end();) {
    if (now_ms - it->second.issued_ms < options_.read_timeout_ms) {
      ++it;
      continue;
    }
    auto waiting = std::move(it->second.waiting);
    it = reads_.erase(it);
    for (auto& done : waiting) done(Status::Unavailable("the leader could not confirm the read in time; retry"));
  }
}

bool ProposalTracker::FollowLeadership() {
  const bool leading = log_.LeaderCaughtUp();
  const uint64_t term = log_.term();
  if (leading == leading_ && (!leading || term == leading_term_)) return false;
  const bool was_leading = leading_;
  if (options_.metrics != nullptr) ++options_.metrics->leader_changes;
  leading_ = leading;
  leading_term_ = leading ? term : 0;
  // Proposals of an earlier leadership may still commit (a later leader
  // commits what it finds in its log) or may be overwritten; either way this
  // replica no longer learns which in time, so their clients retry.
  FailPending(NotLeader(), /*keep_term=*/leading ? term : 0);
  FailReads(NotLeader());
  // A change proposed in an earlier leadership may still commit, but this
  // replica cannot tell the client which; `replica list` can.
  FailMembership(NotLeader());
  if (leading) {
    spdlog::info("leading term={} commit={}", term, log_.commit_index());
  } else if (was_leading) {
    spdlog::info("stepped down term={} leader={}", term, log_.leader_id());
  }
  return true;
}

}  // namespace gpool::control
