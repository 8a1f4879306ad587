// Link: the worker's side of the coordinator channel (docs/protocol.md,
// "Worker channel behaviour"), written as a state machine with no I/O in the manner of etcd's
// raft core. The Agent feeds it frames (Receive) and time (Tick); it answers
// with actions to perform in order: connect (drop the socket, open a new one
// to an endpoint) and send (one frame on the current socket).
//
//   Start ──> registering: RegisterNode now, again after 100 ms doubling to
//     │       5 s (+-20 % jitter) until RegisterNodeReply. A retry that finds
//     │       the link silent for the liveness window (3 heartbeat intervals;
//     │       3 s before the coordinator has said) first reconnects to the
//     │       next endpoint. NotLeader naming the leader: connect there and
//     │       register at once, no backoff (at most 3 such hops between two
//     │       retries, so replicas naming each other cannot spin it).
//     │       NotLeader naming none (an election): the next endpoint at the
//     │       next retry, which comes within electing_retry_ms.
//     ▼
//   registered: Heartbeat{running, usage} every heartbeat_interval_ms; task events
//     sent as they appear and resent every second until TaskEventAck.
//     Silence for 3 intervals -> reconnect to the next endpoint, register.
//     ErrorReply NotFound (the coordinator lost this node) -> register now.
//
// The lease hold (docs/operations.md 9.3): a leader's acknowledgement
// renews the node lease for lease_ms from the send. When no leader has
// acknowledged this node for nearly that long and no replica that answered
// meanwhile named a leader (none answered at all, or those that did know no
// leader: the control plane is down or electing, not up without this node),
// the lease still in force is prolonged once, to lease_hold_ms from the same
// send. Why that is safe: the hold is at most the node-loss grace less the
// margin the coordinator demands of any lease (LeaseHoldMs, control/
// node_registry.h), and no coordinator requeues a node's tasks before that
// grace has passed since it last heard the node (a new leader: since its
// election and a full timeout more), which is after this send. So the hold
// is exactly as safe as the longest lease an operator may configure. A
// replica that names a leader this node cannot reach means the node is the
// one cut off: no hold, the tasks stop at the plain lease. A lease that has
// already run out (this process was stopped past it) is never revived.
//
// Any decoded coordinator message counts as liveness. The highest epoch in
// any message is kept; BindTask and PreemptTask with a lower epoch are
// refused with ErrorReply StaleEpoch and change nothing (FetchLog is a read
// and is served whatever its epoch; so are the exec requests). Commands are served in both phases.
//
// Bad input never crashes the link: a frame that does not decode is counted
// and logged (rate-limited); when enough of it parses to recover a request
// id and the frame is not a reply, it is answered with ErrorReply carrying
// the decode error's code (Malformed, UnknownType, UnsupportedVersion).
//
// The rest of the agent is one narrow interface, LinkHost (link_host.h):
// what the node is, what a heartbeat says about it (assembled by the host,
// NodeHost in the agent), its health and events, and the commands and reads
// the coordinator sends. The Link knows nothing of tasks, samplers or exec.
//
// Ownership and threads: owned by the Agent; one thread. The host, clock and
// logger are not owned and must outlive the Link.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/logger.h>

#include "protocol/base/clock.h"
#include "protocol/envelope.h"
#include "protocol/metrics/exposition.h"
#include "worker/backoff.h"
#include "worker/link_host.h"

namespace gpool::worker {

struct LinkOptions {
  std::vector<std::string> endpoints;  // required; the next one is tried on each reconnect
  std::string token;                   // put in header.token of every frame
  std::string worker_version;          // reported in RegisterNode
  std::string join_token;              // sent in RegisterNode (admission enrolment); empty: none
  LinkHost* host = nullptr;            // required: the rest of the agent (link_host.h)
  const Clock* clock = nullptr;        // required
  std::function<double()> random;      // uniform in [0, 1) for jitter; nullptr: a seeded mt19937
  std::shared_ptr<spdlog::logger> logger;  // nullptr: spdlog's default
  BackoffOptions register_backoff;     // 100 ms doubling to 5 s, +-20 %
  uint32_t liveness_intervals = 3;     // silence this many heartbeat intervals -> reconnect
  int64_t default_heartbeat_ms = 1000;  // until RegisterNodeReply says otherwise
  int64_t min_heartbeat_ms = 10;       // a reply's interval is clamped to [min, max]
  int64_t max_heartbeat_ms = 60'000;
  int64_t event_resend_ms = 1000;      // resend an unacknowledged TaskEvent after this, then backing off to 16x
  // After NotLeader naming no leader (an election under way, which takes
  // about an election timeout), the next registration attempt comes within
  // this, however far the backoff has grown while the control plane was away.
  int64_t electing_retry_ms = 500;
  wire::DecodeLimits limits;
  // The node lease (docs/architecture.md, "Node loss"): LinkHost::RenewLease
  // is called when the coordinator acknowledges a RegisterNode or a
  // Heartbeat, with the time (this link's clock) that message was sent and
  // the lease it grants, so the node's deadline counts from the send. The
  // lease assumed when the coordinator grants none (an older one):
  int64_t lease_when_none_ms = 24LL * 3600 * 1000;
};

struct LinkAction {
  enum class Kind { kConnect, kSend };
  Kind kind = Kind::kSend;
  std::string data;  // the endpoint (kConnect) or the frame (kSend)
};

struct LinkStats {
  uint64_t frames_received = 0;
  uint64_t decode_errors = 0;
  uint64_t error_replies_sent = 0;
  uint64_t stale_epoch_refusals = 0;
  uint64_t register_attempts = 0;
  uint64_t registrations = 0;
  uint64_t reconnects = 0;
  uint64_t heartbeats_sent = 0;
  uint64_t leader_hops = 0;   // registrations sent at once to a leader a NotLeader named
  uint64_t lease_holds = 0;   // leases prolonged to the hold (control plane away)
  // Coordinator commands handled, and how long handling one took (a bind
  // starts the task's process: most of a task's start-up on this side).
  uint64_t binds = 0;
  uint64_t preempts = 0;
  metrics::Histogram command_seconds{metrics::LatencyBounds()};
};

class Link {
 public:
  static Result<std::unique_ptr<Link>> Open(LinkOptions options);

  // Connects to the first endpoint and sends RegisterNode.
  void Start();
  // One frame from the coordinator.
  void Receive(std::string_view frame);
  // Registration retries, heartbeats, the liveness countdown, event sends.
  // Time in which this link was not ticked for longer than a heartbeat
  // interval (its thread busy elsewhere, the process paused) does not count
  // toward the coordinator's silence: the coordinator answers heartbeats, and
  // none were sent meanwhile.
  void Tick();
  // When Tick may next do something (monotonic ms) unless a frame arrives,
  // Start is called or the host's events or health change first: a caller
  // that ticks many links (the fleet) ticks each only then. Never later
  // than an interval from now, so Tick's allowance for its own stalls (a
  // gap of more than an interval between ticks) stays out of the way.
  int64_t NextDueMs() const;
  // The actions produced since the last call, in order.
  std::vector<LinkAction> TakeActions() { return std::exchange(actions_, {}); }

  bool registered() const { return phase_ == Phase::kRegistered; }
  // Whether the next Tick would give up on the coordinator for silence. A
  // caller that reads sockets lazily (the fleet) reads this link's socket
  // first, so frames that arrived while it was busy elsewhere count.
  bool SilenceDue() const {
    return phase_ != Phase::kIdle && Now() - last_heard_ms_ >= LivenessMs();
  }
  uint64_t epoch() const { return max_epoch_; }
  const std::string& endpoint() const { return options_.endpoints[endpoint_index_]; }
  int64_t heartbeat_interval_ms() const { return interval_ms_; }
  const LinkStats& stats() const { return stats_; }
  // How long since the coordinator last said anything (health: coordinator
  // reachability); -1 before the link started.
  int64_t silent_ms() const { return phase_ == Phase::kIdle ? -1 : Now() - last_heard_ms_; }

 private:
  enum class Phase { kIdle, kRegistering, kRegistered };

  explicit Link(LinkOptions options);

  int64_t Now() const { return options_.clock->MonoMs(); }
  int64_t LivenessMs() const { return static_cast<int64_t>(options_.liveness_intervals) * interval_ms_; }

  void Connect(size_t index);
  void ReconnectNext(const char* why);
  void BeginRegistration();
  void SendRegister();
  void SendHeartbeat();
  void SendEvents();

  template <typename T>
  void Send(const T& body, uint64_t request_id);
  template <typename T>
  void Reply(const Header& request, const T& body);
  void ReplyError(const Header& request, const Status& status);

  void OnDecodeError(std::string_view frame, const Status& status);
  void OnRegisterReply(const Envelope& env);
  void OnErrorReply(const Envelope& env);
  void OnTaskEventAck(const Envelope& env);
  // An Ack: when it answers one of our heartbeats, the lease is renewed.
  void OnAck(const Envelope& env);
  void RenewLease(int64_t sent_ms);
  int64_t LeaseMs() const { return lease_ms_ > 0 ? lease_ms_ : options_.lease_when_none_ms; }
  // The lease hold (above): prolongs the lease once it is about to run out
  // with no leader's acknowledgement and no replica naming a leader.
  void MaybeHoldLease(int64_t now);
  void OnBind(const Envelope& env, uint64_t epoch_before);
  void OnPreempt(const Envelope& env, uint64_t epoch_before);
  void OnNodeLabels(const Envelope& env, uint64_t epoch_before);
  void OnFetchLog(const Envelope& env);
  // TaskExecStart, TaskExecPoll, TaskExecSignal: reads, served whatever their epoch.
  void OnExec(const Envelope& env);
  bool Fence(const Header& header, uint64_t epoch_before);

  LinkOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  Backoff backoff_;
  std::string sender_;

  Phase phase_ = Phase::kIdle;
  size_t endpoint_index_ = 0;
  bool rotate_on_retry_ = false;
  std::string redirect_;  // the leader's endpoint from the last NotLeader, if it named one
  int64_t last_heard_ms_ = 0;
  int64_t last_tick_ms_ = INT64_MIN;  // INT64_MIN: not started
  int64_t next_register_ms_ = 0;
  int64_t next_heartbeat_ms_ = 0;
  int64_t interval_ms_;
  uint64_t max_epoch_ = 0;
  uint64_t next_request_id_ = 1;
  uint64_t register_request_id_ = 0;
  // The last refusal of a registration, logged once: a node awaiting an
  // admin's approval retries every few seconds and would repeat it each time.
  std::string last_refusal_;
  int64_t register_sent_ms_ = 0;
  int64_t lease_ms_ = 0;  // as RegisterNodeReply granted it; 0: none
  int64_t hold_ms_ = 0;   // RegisterNodeReply.lease_hold_ms; 0: none
  // The health kinds the coordinator registered with knows
  // (RegisterNodeReply.health_kinds): heartbeats tell it no other.
  uint32_t coordinator_health_kinds_ = kHealthKindsBeforeRepairs;
  bool register_health_told_older_ = false;  // the registration's list was HealthForCoordinator's, changed
  // The send time of the last message a leader acknowledged (INT64_MIN:
  // none yet), whether the lease counted from it was held already, and
  // whether a replica has named a leader since.
  int64_t leader_sent_ms_ = INT64_MIN;
  bool held_ = false;
  bool leader_named_ = false;
  uint32_t leader_hops_ = 0;  // immediate hops to a named leader since the last retry
  // Heartbeats sent and not yet acknowledged: request id -> when, and the
  // health version it carried (0: none). Bounded.
  struct SentHeartbeat {
    int64_t sent_ms = 0;
    uint64_t health_version = 0;
  };
  std::map<uint64_t, SentHeartbeat> heartbeat_sent_ms_;
  uint64_t register_health_version_ = 0;
  uint64_t acked_health_version_ = 0;  // the coordinator has this version of the list
  uint64_t sent_health_version_ = 0;   // the last version put on the wire
  // When a heartbeat last carried health; "long ago" at first, so the first
  // change goes out at once whatever the clock reads.
  int64_t last_health_send_ms_ = std::numeric_limits<int64_t>::min() / 2;
  // seq -> when last sent and how often. Resends back off (1, 2, 4, 8, then
  // every 16 event_resend_ms): while the coordinator commits slowly, every
  // unacknowledged event resent each second was a flood that slowed it more.
  struct EventSent {
    int64_t ms = 0;
    uint32_t sends = 0;
  };
  std::map<uint64_t, EventSent> event_sent_ms_;

  int64_t decode_log_window_ms_ = 0;
  uint32_t decode_logged_in_window_ = 0;

  LinkStats stats_;
  std::vector<LinkAction> actions_;
};

}  // namespace gpool::worker
