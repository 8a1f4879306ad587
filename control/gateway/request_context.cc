#include "control/gateway/request_context.h"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "protocol/base/token_file.h"
#include "protocol/message_type.h"
#include "protocol/model/users.h"
#include "protocol/security/task_exec_key.h"

namespace gpool::control {

namespace {

bool Mutating(MessageType type) { return MutatingRequest(type); }

bool IsExec(MessageType type) {
  return type == MessageType::kExecStart || type == MessageType::kExecPoll || type == MessageType::kExecSignal;
}

}  // namespace

RequestContext::RequestContext(const GatewayOptions& options, const state::ClusterState& state,
                               const WorkerTable& workers, WorkerRelay& relay, Outbox& outbox, Proposer& proposer)
    : options_(options),
      state_(state),
      workers_(workers),
      relay_(relay),
      outbox_(outbox),
      proposer_(proposer),
      configured_admin_{"admin", {options.admin_key}, -1, -1, {RoleGrant{Role::kAdmin, ""}}} {}

void RequestContext::Fail(const std::string& peer, uint64_t request_id, const Status& status) {
  Reply(peer, MakeError(request_id, proposer_.epoch(), status, proposer_.leader_client_address()));
}

void RequestContext::AfterBarrier(const Request& request, std::function<void()> serve) {
  proposer_.ReadBarrier([this, peer = request.peer, id = request.id, serve = std::move(serve)](const Status& status) {
    if (!status.ok()) return Fail(peer, id, status);
    serve();
  });
}

int64_t RequestContext::WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<Actor> RequestContext::ResolveActor(const Principal& principal, const Envelope& envelope) const {
  Actor actor;
  actor.key = principal.key;
  // A cluster token still configured with CurveZMQ on is required as well
  // (defence in depth); an exec request may carry its job's exec token
  // instead, checked against the job in ExecTarget.
  if (principal.kind != Principal::Kind::kInsecure && !options_.token.empty() &&
      !ConstantTimeEquals(envelope.header().token, options_.token) &&
      !(IsExec(envelope.type()) && !envelope.header().token.empty())) {
    return Status::Unauthenticated("wrong or missing token");
  }
  switch (principal.kind) {
    case Principal::Kind::kInsecure: {
      // --insecure: the old rules. The cluster token (or none configured)
      // is an admin; an exec request may carry a job's exec token instead,
      // checked against its job in ExecTarget.
      const std::string& token = envelope.header().token;
      if (options_.token.empty() || ConstantTimeEquals(token, options_.token)) {
        actor.kind = Actor::Kind::kInsecureAdmin;
        actor.name = "insecure";
        return actor;
      }
      if (IsExec(envelope.type()) && !token.empty()) {
        actor.kind = Actor::Kind::kAnonymous;
        actor.name = "exec-token";
        return actor;
      }
      return Status::Unauthenticated("wrong or missing token");
    }
    case Principal::Kind::kUser: {
      if (!options_.admin_key.empty() && principal.key == options_.admin_key) {
        actor.kind = Actor::Kind::kUser;
        actor.name = "admin";
        actor.user = &configured_admin_;
        return actor;
      }
      const UserSpec* user = state_.FindUser(principal.name);
      // The key directory the transport admits by may lag a removal by a
      // moment; the committed record decides. A key rotated away is refused
      // from its deadline on, on a connection opened before it too.
      if (user == nullptr || std::find(user->keys.begin(), user->keys.end(), principal.key) == user->keys.end()) {
        return Status::Unauthenticated("key " + principal.key + " is not registered to user " + principal.name);
      }
      if (!user->KeyValid(principal.key, WallNowMs())) {
        return Status::Unauthenticated("key " + principal.key + " of user " + principal.name +
                                       " was rotated away and its grace has ended");
      }
      actor.kind = Actor::Kind::kUser;
      actor.name = user->name;
      actor.user = user;
      return actor;
    }
    case Principal::Kind::kBootstrap:
      if (state_.HasAdmin()) {
        return Status::Unauthenticated("key " + principal.key +
                                       " belongs to no user; an admin adds it with `gpool admin user add-key`");
      }
      actor.kind = Actor::Kind::kBootstrap;
      actor.name = "bootstrap";
      return actor;
    case Principal::Kind::kTask: {
      // The committed record decides, as for users: the key directory may
      // still admit a task that ended a moment ago, or a connection opened
      // while it ran may outlive it; from its end on its key opens nothing.
      // The name is the directory's (derived from the task's identity), so
      // the attempt it names is the one the key was made for.
      const auto task = security::ParseTaskExecName(principal.name);
      const state::TaskRecord* record = task ? state_.FindTask(*task) : nullptr;
      if (record == nullptr || !state::HoldsResources(record->state)) {
        return Status::Unauthenticated("key " + principal.key + " is the exec key of no bound or running task" +
                                       (task ? " (task " + task->ToString() + " ended)" : std::string()));
      }
      actor.kind = Actor::Kind::kJob;
      actor.name = "task-" + task->ToString();
      actor.job = task->job.value();
      return actor;
    }
    case Principal::Kind::kToken: {
      GPOOL_ASSIGN_OR_RETURN(actor, ResolveTokenActor(principal, envelope.type()));
      return actor;
    }
    case Principal::Kind::kNode:
    case Principal::Kind::kNewNode:
    case Principal::Kind::kReplica:
      break;
  }
  return Status::Unauthenticated(std::string("a ") + std::string(KindName(principal.kind)) +
                                 " key cannot use the client port");
}

Result<Actor> RequestContext::ResolveTokenActor(const Principal& principal, MessageType type) const {
  const ApiTokenInfo* token = state_.api_tokens().Find(principal.key);
  if (token == nullptr || token->owner != principal.name) {
    return Status::Unauthenticated("API token " + principal.key + " was revoked");
  }
  if (token->expires_ms != 0 && token->expires_ms <= WallNowMs()) {
    return Status::Unauthenticated("API token " + token->id + " expired; make another with `gpool token create`");
  }
  if (!state::ScopeAllows(token->scope, TokenScope::kRead)) {
    return Status::PermissionDenied("API token " + token->id + " has scope metrics: it opens /metrics only");
  }
  if (MutatingRequest(type) && !state::ScopeAllows(token->scope, TokenScope::kWrite)) {
    return Status::PermissionDenied("API token " + token->id + " has scope " + std::string(NameOf(token->scope)) +
                                    ": " + std::string(MessageTypeName(type)) + " needs a write token");
  }
  Actor actor;
  actor.kind = Actor::Kind::kUser;
  actor.token_id = token->id;
  if (token->configured_admin) {
    if (options_.admin_key.empty() || token->admin_key != options_.admin_key) {
      return Status::Unauthenticated("API token " + token->id + " was made with an --admin-key that is no longer set");
    }
    actor.name = "admin";
    actor.user = &configured_admin_;
    return actor;
  }
  const UserSpec* user = state_.FindUser(token->owner);
  if (user == nullptr) return Status::Unauthenticated("user " + token->owner + " no longer exists");
  actor.name = user->name;
  actor.user = user;
  return actor;
}

bool RequestContext::Permit(const Request& request, Permission permission, const Target& target, std::string what) {
  return PermitDecided(request, Authorize(request.actor, permission, target, state_), std::move(what));
}

bool RequestContext::PermitDecided(const Request& request, const Decision& decision, std::string what) {
  if (decision.allowed) {
    if (Mutating(request.type)) approved_ = AuditEntryOf(request, std::move(what), true, {});
    return true;
  }
  if (Mutating(request.type)) AuditRequest(request, what, false, decision.missing);
  spdlog::info("request refused user={} request={} target=\"{}\" missing=\"{}\"", request.actor.name,
               MessageTypeName(request.type), what, decision.missing);
  Fail(request.peer, request.id,
       Status::PermissionDenied(request.actor.name + " may not " + decision.missing + " (" + what + ")"));
  return false;
}

void RequestContext::AuditRequest(const Request& request, std::string what, bool allowed, std::string reason) {
  if (!allowed) {
    // Refusals cost a log entry each: a caller hammering a forbidden request
    // gets a bounded share of the log, the rest counted in the next entry.
    const int64_t second = frame_now_ms_ / 1000;
    if (second != audit_second_) {
      audit_second_ = second;
      audited_this_second_ = 0;
    }
    if (audited_this_second_ >= options_.audit_refusals_per_s) {
      ++refusals_unrecorded_;
      return;
    }
    ++audited_this_second_;
    if (refusals_unrecorded_ > 0) {
      reason += " (and " + std::to_string(refusals_unrecorded_) + " refusals before it not recorded: over " +
                std::to_string(options_.audit_refusals_per_s) + "/s)";
      refusals_unrecorded_ = 0;
    }
  }
  AuditEntry entry = AuditEntryOf(request, std::move(what), allowed, std::move(reason));
  if (!allowed) entry.outcome = "denied";
  ProposeAudit(std::move(entry));
}

AuditEntry RequestContext::AuditEntryOf(const Request& request, std::string what, bool allowed, std::string reason) {
  AuditEntry entry;
  entry.user = request.actor.name;
  entry.request = std::string(MessageTypeName(request.type));
  entry.target = std::move(what);
  entry.allowed = allowed;
  entry.reason = std::move(reason);
  return entry;
}

void RequestContext::ProposeAudit(AuditEntry entry) {
  proposer_.Propose(state::AuditCmd{{std::move(entry)}}, [](const state::ApplyResult& result) {
    if (!result.status.ok()) spdlog::warn("audit entry not committed error=\"{}\"", result.status.ToString());
  });
}

std::optional<AuditEntry> RequestContext::ProposeApprovedAudit() {
  if (!approved_) return std::nullopt;
  std::optional<AuditEntry> entry = std::move(approved_);
  approved_.reset();
  entry->outcome = "requested";
  ProposeAudit(*entry);
  return entry;
}

void RequestContext::AuditOutcome(std::optional<AuditEntry> requested, const Status& status) {
  if (!requested) return;
  AuditEntry entry = std::move(*requested);
  entry.outcome = status.ok() ? "succeeded" : "failed";
  entry.code = status.ok() ? "" : std::string(StatusCodeName(status.code()));
  entry.reason = status.ok() ? "" : status.message();
  // A failure because leadership moved is not applied anywhere, and this
  // leader cannot commit the entry either; the proposal fails quietly then.
  ProposeAudit(std::move(entry));
}

void RequestContext::ProposeAudited(state::CommandBody body, ApplyCallback done) {
  // The audit entry goes first: a request is never applied unrecorded. Its
  // outcome follows once applied.
  std::optional<AuditEntry> requested = ProposeApprovedAudit();
  proposer_.Propose(std::move(body), [this, requested = std::move(requested), done = std::move(done)](
                                         const state::ApplyResult& result) {
    AuditOutcome(requested, result.status);
    done(result);
  });
}

}  // namespace gpool::control
