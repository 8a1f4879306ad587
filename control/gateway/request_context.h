// RequestContext: what every client endpoint (control/gateway/*_endpoint.h)
// shares: who the caller is (ResolveActor), whether it may do what it asks
// (Permit, which answers PermissionDenied itself), the audit stream of
// mutating requests, the read barrier, and the reply path. The Gateway
// (control/gateway.h) owns one and routes each request to its endpoint.
//
// Audit (issue 31): Permit approves a mutating request's entry, and the entry
// is proposed just before the request's own command (ProposeAudited), so a
// request is never applied unrecorded, while one refused as invalid after
// Permit records nothing. Refusals are recorded too, at most
// audit_refusals_per_s a second; the rest are counted in the next entry.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "control/authz.h"
#include "control/frames.h"
#include "control/ports.h"
#include "control/principal.h"
#include "control/snapshot_fork.h"
#include "control/state/cluster_state.h"
#include "control/worker_relay.h"
#include "control/worker_table.h"
#include "protocol/envelope.h"
#include "protocol/message_type.h"
#include "protocol/model/users.h"
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
  // Draws each join token's secret; nullptr: 192 random bits. Tests pass a fixed one.
  std::function<std::string()> new_join_token;
  // Audited refusals per second at most; the rest are counted in the next
  // entry (a flood of refused requests must not fill the log).
  uint32_t audit_refusals_per_s = 50;
  // --uid-range (issue 48): users created without a uid get the lowest free
  // one of it, chosen in apply (UpdateUserCmd carries the range).
  uint32_t uid_first = 200'000;
  uint32_t uid_last = 299'999;
  // rGPU sessions one user may have open (not yet finished) at once; one
  // more is ResourceExhausted at submit. Admins are not held to it (issue
  // 48, finding 6: one member must not hold what everyone shares).
  uint32_t max_sessions_per_user = 16;
  // `gpool exec` commands one caller may have open at once through this
  // leader (issue 48); admins are not held to it.
  uint32_t max_exec_streams_per_user = 32;
  // Requests one key may have received and not yet answered (issue 48);
  // one more is answered ResourceExhausted at once. Admins are not held.
  uint32_t max_inflight_per_key = 256;
  // When an API token was last used on this replica (ms; 0: never), for
  // ListTokens; kept by the HTTP port, leader-local (never replicated: a
  // log entry per request would be the cost). Null: always 0.
  std::function<int64_t(const std::string& token_id)> token_last_used;
  // Issue 49: asks for an image of the state at an index >= min_index,
  // encoded off the loop (SnapshotTaker::RequestImage); `done` runs later, on
  // the loop. Null: ExportSnapshot encodes on the loop at once (unit tests).
  std::function<void(uint64_t min_index, std::function<void(Result<std::shared_ptr<ForkedImage>>)> done)>
      request_snapshot_image;
};

// One client request as the endpoints handle it: who asked, and where to answer.
struct Request {
  std::string peer;
  uint64_t id = 0;
  MessageType type = MessageType::kAck;
  Actor actor;
};

class RequestContext {
 public:
  RequestContext(const GatewayOptions& options, const state::ClusterState& state, const WorkerTable& workers,
                 WorkerRelay& relay, Outbox& outbox, Proposer& proposer);

  const GatewayOptions& options() const { return options_; }
  const state::ClusterState& state() const { return state_; }
  const WorkerTable& workers() const { return workers_; }
  WorkerRelay& relay() { return relay_; }
  Proposer& proposer() { return proposer_; }

  // Around each frame: the frame's time (the refusal budget's clock), and
  // dropping what Permit approved but nothing proposed.
  void BeginFrame(int64_t now_ms) { frame_now_ms_ = now_ms; }
  void EndFrame() { approved_.reset(); }

  // The caller: the principal in secure mode; the token's admin, or an exec
  // token's holder, with --insecure.
  Result<Actor> ResolveActor(const Principal& principal, const Envelope& envelope) const;
  // The --admin-key's holder (no user record).
  bool IsConfiguredAdmin(const Actor& actor) const { return actor.user == &configured_admin_; }
  // Whether the caller may; when not, answers PermissionDenied and audits the
  // refusal of a mutating request. `what` names the target in both.
  bool Permit(const Request& request, Permission permission, const Target& target, std::string what);
  // Permit for a decision made by a rule of its own (class_grants.h).
  bool PermitDecided(const Request& request, const Decision& decision, std::string what);
  void AuditRequest(const Request& request, std::string what, bool allowed, std::string reason);
  // Proposes the audit entry Permit approved for this request, if any, as
  // "requested"; returns it, for AuditOutcome once the outcome is known.
  std::optional<AuditEntry> ProposeApprovedAudit();
  // A second entry for an approved request: "succeeded", or "failed" with
  // the error's code and message.
  void AuditOutcome(std::optional<AuditEntry> requested, const Status& status);
  // The approved audit entry, then `body`, then the outcome's entry.
  void ProposeAudited(state::CommandBody body, ApplyCallback done);

  void Reply(const std::string& peer, std::string frame) { outbox_.ToClient(peer, std::move(frame)); }
  template <typename T>
  void Answer(const Request& request, const T& body) {
    Reply(request.peer, MakeFrame(request.id, proposer_.epoch(), body));
  }
  // An error reply; a NotLeader one names the leader.
  void Fail(const std::string& peer, uint64_t request_id, const Status& status);
  void Fail(const Request& request, const Status& status) { Fail(request.peer, request.id, status); }
  // Runs `serve` after Proposer::ReadBarrier, or answers its error.
  void AfterBarrier(const Request& request, std::function<void()> serve);

  // The body of `envelope` as T, or nothing after answering the decode error.
  template <typename T>
  std::optional<T> Decode(const Request& request, const Envelope& envelope) {
    auto body = envelope.Body<T>();
    if (!body.ok()) {
      Fail(request, body.status());
      return std::nullopt;
    }
    return std::move(body).value();
  }

  static Target JobTarget(const state::JobRecord& job) { return Target{job.spec.user, job.spec.queue, job.id.value()}; }
  static int64_t WallNowMs();

 private:
  // An HTTP request with an API token (Principal kToken): the committed
  // token and its owner's record decide, so a revoked token is refused by
  // every replica.
  Result<Actor> ResolveTokenActor(const Principal& principal, MessageType type) const;
  static AuditEntry AuditEntryOf(const Request& request, std::string what, bool allowed, std::string reason);
  void ProposeAudit(AuditEntry entry);

  GatewayOptions options_;
  const state::ClusterState& state_;
  const WorkerTable& workers_;
  WorkerRelay& relay_;
  Outbox& outbox_;
  Proposer& proposer_;
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
