// Gateway: the client API. Decodes requests, checks the token, answers reads
// from the applied state and turns writes into proposed commands, replying
// only once the command is committed (a job id is never handed out before
// the job is durable).
//
// Only the serving leader answers (Proposer::leading()); any other replica
// answers every request with ErrorReply NotLeader naming the leader's client
// endpoint, and a write whose commit was lost to a leader change is answered
// NotLeader too, so the client retries it at the new leader with the same
// idempotency key. The one exception: ClusterStatus on a replica that knows
// no leader is answered from that replica, so an operator can see an
// election (or a lost quorum) rather than a timeout.
//
// Reads of the state (jobs, nodes, task logs) wait for Proposer::ReadBarrier,
// so a leader that was deposed without noticing cannot answer from a stale
// state; ClusterStatus, a report on this replica, does not wait.
//
// Exec (`gpool exec`, gateway_exec.cc): the requests are authorised like
// any write by the cluster token, or by the target job's own exec token
// (JobRecord::exec_token, drawn here at submit), which authorises nothing
// else: a task holding it can exec into its siblings and no other job.
//
// Worker facts (last seen, GPU memory used) come from the WorkerTable, task
// logs through the WorkerRelay, and replication facts from Proposer::Replication;
// the Gateway calls no other manager.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <functional>
#include <string>

#include "control/authz.h"
#include "control/principal.h"
#include "control/snapshot_exports.h"
#include "control/worker_relay.h"
#include "control/ports.h"
#include "control/task_lookup.h"
#include "control/watch/watch_hub.h"
#include "control/worker_table.h"
#include "protocol/envelope.h"
#include "protocol/security/keys.h"
#include "protocol/validate.h"

namespace gpool::control {

struct GatewayOptions {
  std::string token;  // empty: no authentication (with --insecure)
  // --admin-key: a public key that is an admin whatever the users say (the
  // operator's break-glass key, and how tests and the quickstart start).
  std::string admin_key;
  std::string replica_id = "coordinator";
  std::string client_address;
  wire::DecodeLimits limits;
  SpecLimits spec_limits;
  uint64_t max_spec_bytes = kDefaultMaxSpecBytes;  // encoded; larger specs are ResourceExhausted
  // Draws each job's exec token at submit; nullptr: 128 random bits from
  // std::random_device, as hex. Tests pass a fixed sequence.
  std::function<std::string()> new_exec_token;
  // Unless new_exec_token is set: each job's exec key pair, made ahead off
  // the loop (ExecKeyPool); an error falls back to RandomExecToken.
  std::function<Result<security::KeyPair>()> new_exec_pair;
  // Audited refusals per second at most; the rest are counted in the next
  // entry (a flood of refused requests must not fill the log).
  uint32_t audit_refusals_per_s = 50;
};

// 128 bits from std::random_device, as 32 hex digits.
std::string RandomExecToken();

class Gateway {
 public:
  Gateway(const GatewayOptions& options, const state::ClusterState& state, const WorkerTable& workers,
          WorkerRelay& relay, Outbox& outbox, Proposer& proposer);

  // `principal`: who the transport authenticated the connection as.
  void OnFrame(const std::string& peer, std::string_view bytes, int64_t now_ms, const Principal& principal = {});
  // Where Watch requests go (gateway_watch.cc); without one they are
  // answered Unavailable.
  void set_watch_hub(WatchHub* hub) { watch_hub_ = hub; }
  // Drops snapshot exports idle too long, or all of them once this replica
  // no longer leads (gateway_snapshot.cc). From the loop, every turn.
  void Tick(int64_t now_ms);
  size_t snapshot_exports_held() const { return exports_.held(); }

 private:
  void Reply(const std::string& peer, std::string frame) { outbox_.ToClient(peer, std::move(frame)); }
  // An error reply; a NotLeader one names the leader.
  void Fail(const std::string& peer, uint64_t request_id, const Status& status);
  // Runs `serve` after Proposer::ReadBarrier, or answers its error.
  void AfterBarrier(const std::string& peer, uint64_t request_id, std::function<void()> serve);
  // One client request as the gateway handles it: who asked, and where to answer.
  struct Request {
    std::string peer;
    uint64_t id = 0;
    MessageType type = MessageType::kAck;
    Actor actor;
  };
  // gateway_access.cc: who the caller is (the principal in secure mode; the
  // token's admin, or an exec token's holder, with --insecure), and whether
  // it may do this. Permit answers PermissionDenied itself when not, and
  // records mutating requests (allowed or not) in the audit stream.
  Result<Actor> ResolveActor(const Principal& principal, const Envelope& envelope) const;
  bool Permit(const Request& request, Permission permission, const Target& target, std::string what);
  void AuditRequest(const Request& request, std::string what, bool allowed, std::string reason);
  static AuditEntry AuditEntryOf(const Request& request, std::string what, bool allowed, std::string reason);
  void ProposeAudit(AuditEntry entry);
  // Proposes the audit entry Permit approved for this request, if any, then `body`.
  void ProposeApprovedAudit();
  void ProposeAudited(state::CommandBody body, ApplyCallback done);
  static Target JobTarget(const state::JobRecord& job) { return Target{job.spec.user, job.spec.queue, job.id.value()}; }
  void OnUsers(const Request& request, const Envelope& envelope);
  void OnSubmit(const Request& request, SubmitJob msg);
  void OnCancel(const Request& request, const CancelJob& msg);
  // rGPU sessions (gateway_sessions.cc).
  void OnRenewSession(const Request& request, const RenewSession& msg);
  static void PrepareSessionSpec(const Actor& actor, JobSpec& spec);
  static int64_t WallNowMs();
  // Usage reports and the price table (gateway_usage.cc).
  void OnUsage(const Request& request, const Envelope& envelope);
  void OnGetTaskLog(const Request& request, const GetTaskLog& msg, int64_t now_ms);
  // Watch, WatchRenew, Unwatch (gateway_watch.cc).
  void OnWatch(const Request& request, const Envelope& envelope, int64_t now_ms);
  // ExportSnapshot (gateway_snapshot.cc).
  void OnExportSnapshot(const Request& request, const Envelope& envelope, int64_t now_ms);
  void OnChangeReplicas(const std::string& peer, uint64_t request_id, const ChangeReplicas& msg);
  void OnUpdateNode(const std::string& peer, uint64_t request_id, UpdateNode msg);
  void OnReportProbe(const std::string& peer, uint64_t request_id, ReportProbe msg);
  void OnUpdateQueue(const std::string& peer, uint64_t request_id, UpdateQueue msg);
  // gateway_exec.cc. The caller may exec into a job it has kExecJob on,
  // or into the job whose exec token it carries (a task's MPI launcher).
  void OnExec(const Request& request, const Envelope& envelope, int64_t now_ms);
  void OnExecStart(const std::string& peer, uint64_t request_id, const ExecStart& msg, const std::string& token,
                   const Actor& actor, int64_t now_ms);
  void OnExecPoll(const std::string& peer, uint64_t request_id, const ExecPoll& msg, const std::string& token,
                  const Actor& actor, int64_t now_ms);
  void OnExecSignal(const std::string& peer, uint64_t request_id, const ExecSignal& msg, const std::string& token,
                    const Actor& actor, int64_t now_ms);
  // The running task `name` names, if the caller may exec into it.
  Result<FoundTask> ExecTarget(const std::string& name, uint64_t job_scope, const std::string& token,
                               const Actor& actor) const;
  ListJobsReply ListJobsNow(const ListJobs& msg, const Actor& actor) const;
  ClusterStatusReply StatusNow() const;

  GatewayOptions options_;
  const state::ClusterState& state_;
  const WorkerTable& workers_;
  WorkerRelay& relay_;
  Outbox& outbox_;
  Proposer& proposer_;
  WatchHub* watch_hub_ = nullptr;
  SnapshotExports exports_;
  // Refusal audit budget (AuditRequest): the second it counts and how many
  // were recorded in it; refusals past the budget are only counted.
  int64_t audit_second_ = 0;
  uint32_t audited_this_second_ = 0;
  uint64_t refusals_unrecorded_ = 0;
  // The allowed mutating request being handled, audited when it is proposed.
  std::optional<AuditEntry> approved_;
  int64_t frame_now_ms_ = 0;  // the monotonic time of the frame being handled
  // The --admin-key's user, as ResolveActor hands it out (it is no record).
  UserSpec configured_admin_;
};

}  // namespace gpool::control
