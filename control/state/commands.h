// The commands of the coordinator's replicated log.
//
// Every state change is one of these, encoded into a log entry, committed, and
// applied by ClusterState::Apply in log order on every replica. Commands carry
// everything apply needs (including the proposer's wall time), so applying the
// same log always yields the same state. The encoding is versioned by name:
// never change a field's meaning, only add optional fields.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "control/state/replica_keys.h"
#include "protocol/base/enum_names.h"
#include "protocol/health.h"
#include "protocol/messages_enrolment.h"
#include "protocol/model/api_token.h"
#include "protocol/model/health_fence.h"
#include "protocol/model/node_update.h"
#include "protocol/model/prices.h"
#include "protocol/model/probe.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/task_report.h"
#include "protocol/model/users.h"
#include "protocol/types.h"
#include "topology/plan.h"

namespace gpool::state {
// EnrolmentCmd's op (below).
enum class EnrolmentCmdOp : uint8_t { kPending, kApprove, kReject, kCreateToken, kRevokeToken };
}  // namespace gpool::state

namespace gpool {
template <>
struct EnumNames<state::EnrolmentCmdOp> {
  static constexpr std::array<std::string_view, 5> kNames = {"pending", "approve", "reject", "token-create",
                                                             "token-revoke"};
};
}  // namespace gpool

namespace gpool::state {

struct RegisterNodeCmd {
  NodeSpec node;
  std::vector<TaskReport> tasks;
  std::vector<HealthCondition> health;
  // The key the worker's connection was authenticated with (CurveZMQ);
  // empty on an --insecure cluster. Bound to the node on first use.
  std::string worker_key;
  // Admission enrolment (issue 48): the key must already be bound to the
  // name (an earlier registration, an admin's approval or enrolment) or
  // bring a valid join token, whose SHA-256 is `join_token_hash`; apply
  // refuses it otherwise and changes nothing. False in entries written
  // before admission existed, which bound on first use.
  bool admission = false;
  std::string join_token_hash;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Optional("tasks", tasks);
    v.Optional("health", health);
    v.Optional("worker_key", worker_key);
    v.Optional("admission", admission);
    v.Optional("join_token_hash", join_token_hash);
  }
};

struct NodeStateCmd {
  std::string node;
  NodeState state = NodeState::kReady;  // by name: "Ready", "NotReady", "Lost"
  // Wall time of the last message the coordinator had from the node (what
  // `gpool nodes` shows as LAST SEEN); 0: unknown, the change's own time
  // for Ready and the last known one for NotReady.
  int64_t last_seen_ms = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Required("state", state);
    v.Optional("last_seen_ms", last_seen_ms);
  }
};

struct SubmitJobCmd {
  JobSpec spec;
  std::string idempotency_key;
  // The job's exec credential (JobRecord::exec_token, exec_key), drawn by the gateway.
  std::string exec_token;
  std::string exec_key;
  template <typename V>
  void Fields(V& v) {
    v.Required("spec", spec);
    v.Optional("key", idempotency_key);
    v.Optional("exec_token", exec_token);
    v.Optional("exec_key", exec_key);
  }
};

struct CancelJobCmd {
  uint64_t job_id = 0;
  uint32_t grace_ms = 0;  // SIGTERM-to-SIGKILL time for running tasks; 0: the coordinator's default
  // Set when the coordinator cancels on its own (an rGPU session's lease
  // expired): why, kept as the session's close reason. Empty: a user's cancel.
  std::string reason;
  template <typename V>
  void Fields(V& v) {
    v.Required("job", job_id);
    v.Optional("grace_ms", grace_ms);
    v.Optional("reason", reason);
  }
};

// The owner renewed an rGPU session's lease (RenewSession on the wire).
// An alert rule's verdict on one subject (control/alert_driver.h): firing
// or resolved. Apply keeps the set of firing alerts, so a verdict that
// changes nothing (a repeat, a new leader re-evaluating) emits nothing: an
// alert is raised once and resolved once, whoever leads.
struct AlertCmd {
  std::string key;       // "<rule>/<subject>", e.g. "queue-wait/job-17"
  bool firing = false;
  std::string rule;      // queue-wait | quota | low-utilisation
  std::string severity;  // warning | critical
  std::string message;
  uint64_t job = 0;
  std::string node;
  template <typename V>
  void Fields(V& v) {
    v.Required("key", key);
    v.Required("firing", firing);
    v.Optional("rule", rule);
    v.Optional("severity", severity);
    v.Optional("message", message);
    v.Optional("job", job);
    v.Optional("node", node);
  }
};

// A scale rule's decision (control/scale_driver.h): group `group` of job
// `job` runs `replicas` from now on (within its minimum and replicas).
// Shrinking stops its highest-numbered running replicas, which go back to
// pending and wait until a rule grows the group again.
struct ScaleJobCmd {
  uint64_t job = 0;
  uint32_t group = 0;
  uint32_t replicas = 0;
  std::string trigger;  // the rule that decided: queue-depth | gpu-utilisation | time-window
  std::string message;  // what it saw, for the event
  template <typename V>
  void Fields(V& v) {
    v.Required("job", job);
    v.Required("group", group);
    v.Required("replicas", replicas);
    v.Optional("trigger", trigger);
    v.Optional("message", message);
  }
};

struct RenewSessionCmd {
  uint64_t job_id = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("job", job_id);
  }
};

// The scheduler's plan, proposed as it is (topology/plan.h): binds,
// evictions and pending reasons. Apply re-validates every bind.
using ApplyPlanCmd = topology::Plan;
using PlanBind = topology::Placement;
using PlanEviction = topology::Eviction;
using PlanReasons = topology::PendingReasons;

struct TaskEventCmd {
  TaskEvent event;
  template <typename V>
  void Fields(V& v) {
    v.Required("event", event);
  }
};

// The coordinator's own decision that a bind cannot run as placed: the node
// it went to refused it (its GPUs changed, say). The task fails rather than
// the bind being resent forever. Not a task event: the worker said no such
// thing, and the log says who decided.
struct RefuseBindCmd {
  TaskId task;
  std::string node;
  std::string message;  // the worker's error
  template <typename V>
  void Fields(V& v) {
    v.Required("task", task);
    v.Required("node", node);
    v.Optional("message", message);
  }
};

// An operator's change to a node (UpdateNode on the wire, validated there
// and again on apply).
struct UpdateNodeCmd {
  UpdateNode update;
  template <typename V>
  void Fields(V& v) {
    v.Required("update", update);
  }
};

// An operator's change to the queue tree (UpdateQueue on the wire).
struct UpdateQueueCmd {
  UpdateQueue update;
  template <typename V>
  void Fields(V& v) {
    v.Required("update", update);
  }
};

// The node has been silent past the node-loss grace (longer than its
// worker's lease plus a margin, docs/architecture.md "At most one copy"): its
// tasks are lost, their devices freed and their jobs requeued by their
// restart policy.
struct NodeLostCmd {
  std::string node;
  int64_t last_seen_ms = 0;  // wall time the coordinator last heard from it
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Optional("last_seen_ms", last_seen_ms);
  }
};

// A node's health conditions changed (its worker reported a new list).
struct NodeHealthCmd {
  std::string node;
  std::vector<HealthCondition> health;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Optional("health", health);
  }
};

// A decision of the health policy (control/health/policy.h), committed so
// every replica and the event stream agree on it. action:
//   "cordon" | "drain" | "uncordon"   the node (drain also stops its tasks
//                                     with `grace_ms`, requeued as evicted)
//   "gpu-unhealthy" | "gpu-healthy"   GPU `gpu` of the node
//   "breaker-open" | "breaker-close"  the fencing circuit breaker (node "")
//   "suppressed"                      a fence the policy held back (exempt
//                                     node, breaker open): an event only;
//                                     `reason` is "<dedupe key> <text>"
struct HealthFenceCmd {
  std::string node;
  HealthFenceAction action = HealthFenceAction::kCordon;  // by name, as above
  uint32_t gpu = 0;
  uint32_t grace_ms = 0;
  std::string reason;
  template <typename V>
  void Fields(V& v) {
    v.Optional("node", node);
    v.Required("action", action);
    v.Optional("gpu", gpu);
    v.Optional("grace_ms", grace_ms);
    v.Optional("reason", reason);
  }
};

// How far a webhook sink has delivered the event stream, so a new leader
// resumes after it (at-least-once: it may resend what was delivered since).
struct SinkCursorCmd {
  std::string sink;
  uint64_t seq = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("sink", sink);
    v.Required("seq", seq);
  }
};

// Results of a `gpool probe` run (ReportProbe on the wire): a slow
// condition raised on each node flagged, cleared on each node measured and
// not flagged.
struct ProbeResultCmd {
  ProbeKind kind = ProbeKind::kNetwork;  // by name: "network" or "gpu"
  std::vector<ProbeResult> results;
  template <typename V>
  void Fields(V& v) {
    v.Required("kind", kind);
    v.Optional("results", results);
  }
};

// Retention (retention.h): forget the finished jobs that finished before
// `finished_before_ms`, and then the oldest finished ones (by finish time,
// then id) beyond the newest `keep_newest`. Both numbers are the leader's,
// so every replica forgets the same jobs.
struct ForgetJobsCmd {
  int64_t finished_before_ms = 0;
  uint64_t keep_newest = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("before_ms", finished_before_ms);
    v.Required("keep", keep_newest);
  }
};

// An admin's change to a user (UpdateUser on the wire, validated there and
// again on apply).
// Issue 48: a create (or an update) without a uid takes the lowest uid of
// [uid_first, uid_last] no user holds, chosen in apply so every replica
// picks the same one. The gateway copies its --uid-range into the command
// rather than apply reading a flag: replicas may be started with different
// flags, the log is what they agree on. uid_last 0 (an entry from before
// issue 48): nothing is allocated, as then.
struct UpdateUserCmd {
  UpdateUser update;
  uint32_t uid_first = 0;
  uint32_t uid_last = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("update", update);
    v.Optional("uid_first", uid_first);
    v.Optional("uid_last", uid_last);
  }
};

// The first admin of a fresh cluster: applies only while no admin exists, so
// two racing bootstraps make one admin.
struct BootstrapCmd {
  UserSpec admin;  // with its key and the admin grant, filled by the gateway
  uint32_t uid_first = 0;  // as UpdateUserCmd's
  uint32_t uid_last = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("admin", admin);
    v.Optional("uid_first", uid_first);
    v.Optional("uid_last", uid_last);
  }
};

// Mutating requests as the gateway decided them (audit stream); seq and time
// are assigned on apply.
struct AuditCmd {
  std::vector<AuditEntry> entries;
  template <typename V>
  void Fields(V& v) {
    v.Required("entries", entries);
  }
};

// Usage accounting (usage_ledger.h): running tasks' usage is checkpointed up
// to this command's time (a task whose end is unknown, lost with its node,
// is charged up to the last checkpoint), and the leader's retention numbers
// trim the raw records and hourly rollups, so every replica keeps the same.
struct UsageCheckpointCmd {
  uint64_t keep_records = 0;        // raw records kept at most (newest)
  int64_t records_before_ms = 0;    // raw records that ended before this are dropped
  int64_t hourly_before_ms = 0;     // hourly rollups before this are dropped (daily ones stay)
  int64_t daily_before_ms = 0;      // daily rollups before this day are dropped; 0 (entries before issue 49): none
  template <typename V>
  void Fields(V& v) {
    v.Required("keep_records", keep_records);
    v.Optional("records_before_ms", records_before_ms);
    v.Optional("hourly_before_ms", hourly_before_ms);
    v.Optional("daily_before_ms", daily_before_ms);
  }
};

// The committed price table (`gpool prices set`), validated at the gateway.
struct UpdatePricesCmd {
  PriceTable table;
  // The committed billing rules stay (a client from before them left
  // "billing" out: UpdatePrices.keep_billing); carried in the entry so
  // every replica applies the same.
  bool keep_billing = false;
  template <typename V>
  void Fields(V& v) {
    v.Required("table", table);
    v.Optional("keep_billing", keep_billing);
  }
};

// Node enrolment (protocol/messages_enrolment.h). op:
//   "pending"       `pending.key` registered `pending.node` and awaits an admin
//                   (a new entry, or a known one seen again)
//   "approve"       bind the pending key of `node` (`fingerprint`: which one)
//   "reject"        drop the pending key(s) of `node`
//   "token-create"  keep `token` (its hash, expiry, labels, creator)
//   "token-revoke"  revoke the token `token.id`
struct EnrolmentCmd {
  EnrolmentCmdOp op = EnrolmentCmdOp::kPending;  // by name
  PendingEnrolment pending;
  std::string node;
  std::string fingerprint;
  JoinTokenInfo token;
  template <typename V>
  void Fields(V& v) {
    v.Required("op", op);
    v.Optional("pending", pending);
    v.Optional("node", node);
    v.Optional("fingerprint", fingerprint);
    v.Optional("token", token);
  }
};

// An API token made or revoked (CreateToken / RevokeToken on the wire;
// api_tokens.h). create carries the record with the token's hash, never the
// token; revoke carries the id only.
struct TokenCmd {
  TokenOp op = TokenOp::kCreate;  // by name: create | revoke
  ApiTokenInfo token;
  template <typename V>
  void Fields(V& v) {
    v.Required("op", op);
    v.Required("token", token);
  }
};

// An admin's rotation of a replica's CurveZMQ key (issue 48; ChangeReplicas
// op rotate-key on the wire, validated there): from this entry on the
// replica is `key`; `previous_key` (the key the leader's configuration held)
// stays admitted for grace_ms from the command's time (0: not at all).
// Apply refuses (and changes nothing) a key that is not Z85, the same key,
// and a grace over 30 days.
struct ReplicaKeyCmd {
  uint64_t replica_id = 0;
  std::string key;
  std::string previous_key;
  uint64_t grace_ms = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("replica_id", replica_id);
    v.Required("key", key);
    v.Required("previous_key", previous_key);
    v.Optional("grace_ms", grace_ms);
  }
};

// Issue 50: adds `amount_micro` (negative: takes back) to the credit account
// of `queue`, opening it; validated and allowed (admins) at the gateway.
// Apply refuses a queue that does not exist.
struct CreditCmd {
  std::string queue;
  int64_t amount_micro = 0;
  std::string idempotency_key;  // "": none; a key seen recently: a re-send, not added again
  template <typename V>
  void Fields(V& v) {
    v.Required("queue", queue);
    v.Required("amount", amount_micro);
    v.Optional("idempotency_key", idempotency_key);
  }
};

// A restored cluster's first leader raises the next job id to the floor its
// restore computed (control/snapshot_restore.h): through the log, so every
// replica holds the same counter whenever each was restored.
struct SkipJobIdsCmd {
  uint64_t to = 0;  // the next job gets at least this id
  template <typename V>
  void Fields(V& v) {
    v.Required("to", to);
  }
};

using CommandBody = std::variant<RegisterNodeCmd, NodeStateCmd, SubmitJobCmd, CancelJobCmd, ApplyPlanCmd,
                                 TaskEventCmd, UpdateNodeCmd, UpdateQueueCmd, RefuseBindCmd, NodeLostCmd,
                                 NodeHealthCmd, HealthFenceCmd, SinkCursorCmd, ProbeResultCmd, ForgetJobsCmd,
                                 UpdateUserCmd, BootstrapCmd, AuditCmd, RenewSessionCmd, UsageCheckpointCmd,
                                 UpdatePricesCmd, AlertCmd, EnrolmentCmd, TokenCmd,
                                 ReplicaKeyCmd, CreditCmd, ScaleJobCmd, SkipJobIdsCmd>;

struct Command {
  int64_t time_ms = 0;  // the proposer's wall clock; apply never reads a clock
  CommandBody body;
};

std::string EncodeCommand(const Command& command);
Result<Command> DecodeCommand(std::string_view bytes);
std::string_view CommandName(const CommandBody& body);

}  // namespace gpool::state
