// The interfaces coordinator components use to reach the outside world.
//
// Components (Gateway, NodeRegistry, Dispatcher, WorkerRelay, SchedulerDriver)
// never touch sockets or the log directly: they send frames through Outbox
// and change state only by proposing commands through Proposer. The
// Coordinator implements Outbox over ZeroMQ and ProposalTracker implements
// Proposer over the CommitLog; tests implement them with plain vectors
// (testing/fake_ports.h). All calls happen on the coordinator's loop thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "control/log/commit_log.h"
#include "control/state/cluster_state.h"
#include "protocol/messages_admin.h"

namespace gpool::control {

class Outbox {
 public:
  virtual ~Outbox() = default;
  virtual void ToClient(const std::string& peer, std::string frame) = 0;
  virtual void ToWorker(const std::string& peer, std::string frame) = 0;
};

using ApplyCallback = std::function<void(const state::ApplyResult&)>;

class Proposer {
 public:
  virtual ~Proposer() = default;
  // `done` runs after the command is committed and applied (or failed to commit).
  virtual void Propose(state::CommandBody body, ApplyCallback done) = 0;
  // The current leader epoch, stamped on commands to workers.
  virtual uint64_t epoch() const = 0;
  // Whether this replica serves: it is the leader and its state machine has
  // caught up with everything committed before its term. Components on a
  // replica that does not serve answer NotLeader and propose nothing.
  virtual bool leading() const { return true; }
  // Why Propose would refuse `body` before it reaches the log (a replica
  // runs an older state version that would apply it differently:
  // FailedPrecondition), so that periodic proposers hold back instead of
  // proposing it again every round; Ok when it would go ahead.
  virtual Status Admissible(const state::CommandBody& body) const {
    (void)body;
    return Status::Ok();
  }
  // The leader's client endpoint, for NotLeader redirects; empty while none
  // is known (an election) or while this replica is the leader catching up.
  virtual std::string leader_client_address() const { return {}; }
  // The same for workers: the leader's worker endpoint.
  virtual std::string leader_worker_address() const { return {}; }
  // Runs `done` once the applied state reflects every write committed before
  // this call, so a read served then is linearizable (Raft's ReadIndex: the
  // leader confirms with a quorum that it still leads). NotLeader if
  // leadership is lost first. A single replica is always current.
  using ReadCallback = std::function<void(const Status&)>;
  virtual void ReadBarrier(ReadCallback done) { done(Status::Ok()); }
  // Adds or removes a coordinator replica; `done` runs once the new
  // configuration is committed, or with the reason it cannot be.
  using MembershipCallback = std::function<void(Result<ChangeReplicasReply>)>;
  virtual void ChangeMembership(const ChangeReplicas& request, MembershipCallback done) {
    (void)request;
    done(Status::FailedPrecondition("this coordinator runs as a single replica (started without --peers); "
                                    "its replica set cannot change"));
  }
  // What this replica knows of replication, for ClusterStatus. The default
  // describes a single replica that always leads.
  virtual log::ReplicationReport Replication() const {
    log::ReplicationReport report;
    report.role = "leader";
    report.term = epoch();
    return report;
  }
};

// Request ids for commands the coordinator sends to workers. The Dispatcher
// and the WorkerRelay draw from one source, so a worker's reply names exactly
// one of them.
class RequestIds {
 public:
  uint64_t Next() { return next_++; }

 private:
  uint64_t next_ = 1;
};

}  // namespace gpool::control
