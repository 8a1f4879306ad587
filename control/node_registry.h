// NodeRegistry: the worker channel. Registers nodes, tracks heartbeats,
// marks silent nodes NotReady, and turns worker reports into commands.
//
// A node's liveness is a countdown reset by any frame from it. A node that
// has been silent for `node_timeout_ms` (or never reconnected after a
// coordinator restart) is proposed NotReady; its next heartbeat proposes it
// Ready again. Task events are acknowledged to the worker only after the
// command they became is committed, so a crash in between makes the worker
// resend them rather than lose them.
//
// Only the serving leader (Proposer::leading()) talks to workers: any other
// replica answers their requests with ErrorReply NotLeader naming the
// leader's worker endpoint when it knows it (the worker goes there at once)
// and none during an election (the worker tries its next endpoint soon, and
// holds its lease meanwhile: LeaseHoldMs below). Connections belong to one
// leadership: Reset() forgets them when this replica starts or stops
// leading, and a new leader gives every node a full timeout window to find
// it before proposing anything NotReady.
//
// The registry is the only writer of the WorkerTable (who is connected
// where, last seen, usage) and tells the components that act on workers what
// happened through WorkerEvents (node connected, task settled, worker reply);
// it knows none of them.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "control/metrics/metric_sets.h"
#include "control/ports.h"
#include "control/principal.h"
#include "control/security/key_directory.h"
#include "control/worker_table.h"
#include "protocol/base/clock.h"
#include "protocol/envelope.h"
#include "protocol/messages_watch.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"

namespace gpool::control {

struct NodeRegistryOptions {
  uint32_t heartbeat_interval_ms = 1000;
  int64_t node_timeout_ms = 10'000;
  // A node silent this long is Lost: its tasks are lost and requeued. Must
  // exceed lease_ms by a margin (CheckNodeLossTimes): the node's own
  // supervisors have killed its tasks by then.
  int64_t node_lost_ms = 60'000;
  uint32_t lease_ms = 20'000;  // the node lease workers are given (RegisterNodeReply)
  std::string token;  // empty: no authentication
  // CurveZMQ: told of each key a committed registration binds to a node, so
  // the ZAP handler names the key's next connections after it. May be null
  // (--insecure, tests).
  KeyDirectory* keys = nullptr;
  // How a worker key bound to no node comes to be one (CurveZMQ only;
  // key_directory.h). kAdmission: its registration is a pending enrolment
  // until an admin approves it or it presents a join token.
  WorkerEnrolment enrolment = WorkerEnrolment::kAdmission;
  std::string coordinator_id = "coordinator";
  wire::DecodeLimits limits;
  const Clock* clock = &SystemClock::Get();
  // Heartbeats counted for /metrics; null: not kept.
  WorkerMetrics* metrics = nullptr;
};

// The node-loss grace must leave the lease a margin (docs/architecture.md):
// an InvalidArgument naming the flags otherwise.
Status CheckNodeLossTimes(int64_t node_timeout_ms, int64_t node_lost_ms, int64_t lease_ms);

// The lease hold a registration grants (RegisterNodeReply.lease_hold_ms):
// how long after the send of its last acknowledged message a node may keep
// its tasks while no replica can acknowledge it. The node-loss grace less
// the same margin CheckNodeLossTimes demands of the lease, so it is exactly
// as safe as the longest lease the coordinator accepts: no leader requeues
// a node's tasks before node_lost_ms after it last heard the node (a new
// leader: after its own election and a full timeout), and the node counts
// from its send, which came earlier. Never less than the lease.
uint32_t LeaseHoldMs(int64_t node_lost_ms, uint32_t lease_ms);

class NodeRegistry {
 public:
  // How long a proposed task event answers its resends (events_in_flight_).
  static constexpr int64_t kEventInFlightMs = 30'000;
  NodeRegistry(const NodeRegistryOptions& options, const state::ClusterState& state, WorkerTable& workers,
               Outbox& outbox, Proposer& proposer, int64_t start_ms);
  // `listener` hears every WorkerEvents from now on; it outlives the registry.
  void Subscribe(WorkerEvents* listener) { listeners_.push_back(listener); }

  // `principal`: who the transport authenticated the connection as.
  void OnFrame(const std::string& peer, std::string_view bytes, int64_t now_ms, const Principal& principal = {});
  void Tick(int64_t now_ms);
  // Forgets every connection and restarts the liveness window at now_ms.
  void Reset(int64_t now_ms);

  size_t connected() const { return workers_.size(); }

 private:
  // What the registry watches per node, beside its connection in the table.
  // A node the state knows that has not reconnected in this leadership has
  // a watch but no connection.
  struct Watch {
    int64_t since_ms = 0;  // monotonic: when the watch began, for a node with no connection
    bool not_ready_proposed = false;
    bool ready_proposed = false;           // a Ready proposal for it is in flight
    bool lost_proposed = false;            // a NodeLost proposal for it is in flight or committed
    bool health_proposed = false;          // a NodeHealth proposal for it is in flight
    std::set<TaskId> warned_over_share;    // told once that it uses more than its share
  };

  void OnRegister(const std::string& peer, const Header& header, RegisterNode msg, int64_t now_ms,
                  const Principal& principal);
  void OnHeartbeat(const std::string& peer, const Header& header, const Heartbeat& msg, int64_t now_ms,
                   const Principal& principal);
  void OnTaskEvent(const std::string& peer, const Header& header, TaskEvent msg, int64_t now_ms,
                   const Principal& principal);
  // Whether `principal` may register as `node`: any connection on an
  // insecure cluster; with CurveZMQ, only the key bound to the name, or an
  // unbound key for a name no key is bound to (first use). Unauthenticated
  // otherwise, and logged: nothing of the node or its tasks is touched.
  Status CheckBinding(const std::string& peer, const std::string& node, const Principal& principal) const;
  // Admission enrolment: a registration whose key is not admitted and that
  // brings no join token is recorded (or refreshed) as pending, and refused.
  void RecordPending(const std::string& peer, const Header& header, const RegisterNode& msg,
                     const Principal& principal, int64_t now_ms);
  void ProposeNotReady(const std::string& node);
  void ProposeLost(const std::string& node);
  // Commits the node's reported health when it differs from the state's.
  void SyncHealth(const std::string& node, Watch& watch);
  // Tells the worker on `peer` to stop tasks it reports running that are not
  // placed on `node` (lost, requeued or cancelled while it was away).
  void StopStrays(const std::string& peer, const std::string& node, const std::vector<TaskReport>& reports);
  // When the node was last heard from: its connection's last frame, or the
  // start of its watch when it has none.
  int64_t LastSeen(const std::string& node, const Watch& watch) const;
  // Makes sure Tick looks at the node once its timeout can have run out.
  void Recheck(int64_t last_seen_ms);
  void WarnOverShare(const std::string& node, Watch& watch);
  // Whether this peer registered as `claimed`, with the key `principal`
  // carries (CurveZMQ): a frame is taken only from the connection
  // authenticated as its node.
  bool Authenticate(const std::string& peer, const std::string& claimed, const Principal& principal) const;
  // Whether `principal` is the key `node` registered with (any, insecure).
  bool SameKey(const std::string& node, const Principal& principal) const;
  void Touch(const std::string& node, int64_t now_ms) { workers_.Touch(node, now_ms, options_.clock->WallMs()); }
  void Reply(const std::string& peer, std::string frame) { outbox_.ToWorker(peer, std::move(frame)); }

  NodeRegistryOptions options_;
  const state::ClusterState& state_;
  WorkerTable& workers_;
  Outbox& outbox_;
  Proposer& proposer_;
  std::vector<WorkerEvents*> listeners_;
  int64_t start_ms_;
  // Tick scans the links only from this time on: no link can have been
  // silent for the timeout before it (last_seen only moves forward), so the
  // loop does not walk a thousand links on every turn.
  int64_t next_silence_check_ms_ = 0;
  int64_t next_orphan_scan_ms_ = 0;  // when to look for nodes that never reconnected
  std::map<std::string, Watch> watches_;  // node -> watch
  // node -> the key its current connection registered with (CurveZMQ).
  std::map<std::string, std::string> connection_keys_;
  // Pending keys -> when this leadership last committed their refresh: a
  // worker retrying every few seconds is not a log entry each time.
  std::map<std::string, int64_t> pending_refreshed_ms_;
  // Task events proposed and not settled yet, (node, seq) -> when proposed.
  // A worker resends every unacknowledged event each second; while commits
  // lag (a follower frozen, a loaded disk) each resend was proposed again,
  // more proposals made the commits lag more, and a 1k-GPU scale run's
  // leader held 2.6 million copies of task events (3.4 GB) in 10 minutes. A
  // resend of an event in flight is answered by the one in flight; after
  // kEventInFlightMs it is proposed again (the first may have been lost).
  std::map<std::pair<std::string, uint64_t>, int64_t> events_in_flight_;
  // Each node's last registration proposal, node -> the connection and key
  // that sent it, its latest request id, when it was proposed and whether it
  // committed. The same thundering herd as the events': a worker retries its
  // registration from 100 ms on, doubling, whenever the reply is late, so a
  // 12,500-node fleet registering at once to a loaded leader committed 53,778
  // registrations (each a whole node spec through the log) where 12,500
  // were asked for. A retry on the same connection with the same key is the
  // same attempt: while the first is in flight (up to kEventInFlightMs) it
  // is answered by that one when it commits, under the retry's request id;
  // within kRegistrationSettleMs of the first, once it committed, it is
  // answered at once. Later, it is proposed again.
  static constexpr int64_t kRegistrationSettleMs = 10'000;
  struct RegistrationInFlight {
    std::string peer;
    std::string key;
    uint64_t request_id = 0;
    int64_t proposed_ms = 0;
    uint64_t proposal = 0;  // which proposal it waits for (next_registration_)
    bool committed = false;
    // A hash of what it registered (spec, tasks, health): a registration
    // that says something else (a node back after silence reporting its
    // tasks) is proposed, never answered by an earlier one.
    size_t content = 0;
  };
  RegisterNodeReply MakeRegisterReply() const;
  std::map<std::string, RegistrationInFlight> registrations_in_flight_;
  uint64_t next_registration_ = 0;
};

}  // namespace gpool::control
