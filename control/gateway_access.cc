// Gateway: who the caller is, what it may do, and the audit stream of what it
// asked (issue 31); and the users, bootstrap and audit requests.
#include <algorithm>
#include <charconv>

#include <spdlog/spdlog.h>

#include "control/frames.h"
#include "control/gateway.h"
#include "protocol/base/token_file.h"
#include "protocol/validate_users.h"

namespace gpool::control {
namespace {

bool Mutating(MessageType type) {
  switch (type) {
    case MessageType::kSubmitJob:
    case MessageType::kCancelJob:
    case MessageType::kUpdateNode:
    case MessageType::kUpdateQueue:
    case MessageType::kReportProbe:
    case MessageType::kChangeReplicas:
    case MessageType::kUpdateUser:
    case MessageType::kUpdatePrices:
    case MessageType::kBootstrap:
    case MessageType::kExecStart:
    case MessageType::kExecSignal:
    // Not a write, but who copied the whole state out belongs in the audit.
    case MessageType::kExportSnapshot: return true;
    default: return false;
  }
}

bool IsExec(MessageType type) {
  return type == MessageType::kExecStart || type == MessageType::kExecPoll || type == MessageType::kExecSignal;
}

constexpr uint32_t kMaxAuditPage = 1000;

}  // namespace

Result<Actor> Gateway::ResolveActor(const Principal& principal, const Envelope& envelope) const {
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
      // moment; the committed record decides.
      if (user == nullptr || std::find(user->keys.begin(), user->keys.end(), principal.key) == user->keys.end()) {
        return Status::Unauthenticated("key " + principal.key + " is not registered to user " + principal.name);
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
    case Principal::Kind::kJob: {
      // The committed record decides, as for users: a key the directory
      // still admits for a job forgotten a moment ago opens nothing.
      uint64_t job = 0;
      const auto& name = principal.name;
      auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), job);
      const auto it = error == std::errc() && end == name.data() + name.size() ? state_.jobs().find(job)
                                                                                  : state_.jobs().end();
      if (it == state_.jobs().end() || it->second.exec_key != principal.key) {
        return Status::Unauthenticated("key " + principal.key + " is the exec key of no current job");
      }
      actor.kind = Actor::Kind::kJob;
      actor.name = "job-" + name;
      actor.job = job;
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

bool Gateway::Permit(const Request& request, Permission permission, const Target& target, std::string what) {
  const Decision decision = Authorize(request.actor, permission, target, state_);
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

void Gateway::AuditRequest(const Request& request, std::string what, bool allowed, std::string reason) {
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
  ProposeAudit(AuditEntryOf(request, std::move(what), allowed, std::move(reason)));
}

AuditEntry Gateway::AuditEntryOf(const Request& request, std::string what, bool allowed, std::string reason) {
  AuditEntry entry;
  entry.user = request.actor.name;
  entry.request = std::string(MessageTypeName(request.type));
  entry.target = std::move(what);
  entry.allowed = allowed;
  entry.reason = std::move(reason);
  return entry;
}

void Gateway::ProposeAudit(AuditEntry entry) {
  proposer_.Propose(state::AuditCmd{{std::move(entry)}}, [](const state::ApplyResult& result) {
    if (!result.status.ok()) spdlog::warn("audit entry not committed error=\"{}\"", result.status.ToString());
  });
}

void Gateway::ProposeApprovedAudit() {
  if (!approved_) return;
  ProposeAudit(std::move(*approved_));
  approved_.reset();
}

void Gateway::ProposeAudited(state::CommandBody body, ApplyCallback done) {
  // The audit entry goes first: a request is never applied unrecorded.
  ProposeApprovedAudit();
  proposer_.Propose(std::move(body), std::move(done));
}

void Gateway::OnUsers(const Request& request, const Envelope& envelope) {
  const std::string& peer = request.peer;
  const uint64_t id = request.id;
  switch (envelope.type()) {
    case MessageType::kWhoAmI: {
      WhoAmIReply reply;
      switch (request.actor.kind) {
        case Actor::Kind::kUser: reply.kind = "user"; reply.user = *request.actor.user; break;
        case Actor::Kind::kBootstrap: reply.kind = "bootstrap"; break;
        case Actor::Kind::kJob:
          reply.kind = "job";
          reply.user.name = request.actor.name;
          break;
        default: reply.kind = "insecure"; break;
      }
      return Reply(peer, MakeFrame(id, proposer_.epoch(), reply));
    }
    case MessageType::kBootstrap: {
      auto msg = envelope.Body<Bootstrap>();
      if (!msg.ok()) return Fail(peer, id, msg.status());
      if (!Permit(request, Permission::kBootstrap, {}, "user " + msg->admin.name.substr(0, 64))) return;
      UserSpec admin = std::move(msg->admin);
      // The caller's own key becomes the admin's: bootstrap names nobody else.
      admin.keys.clear();
      if (!request.actor.key.empty()) admin.keys.push_back(request.actor.key);
      admin.roles = {RoleGrant{Role::kAdmin, ""}};
      if (Status valid = ValidateUserSpec(admin); !valid.ok()) return Fail(peer, id, valid.WithContext("admin"));
      if (state_.HasAdmin()) {
        return Fail(peer, id, Status::FailedPrecondition("the cluster already has an admin (bootstrap runs once)"));
      }
      const std::string name = admin.name;
      ProposeAudited(state::BootstrapCmd{std::move(admin)}, [this, peer, id, name](const state::ApplyResult& result) {
        if (!result.status.ok()) return Fail(peer, id, result.status);
        spdlog::warn("cluster bootstrapped admin={}", name);
        const UserSpec* user = state_.FindUser(name);
        Reply(peer, MakeFrame(id, proposer_.epoch(), UpdateUserReply{user ? *user : UserSpec{name}}));
      });
      return;
    }
    case MessageType::kUpdateUser: {
      auto msg = envelope.Body<UpdateUser>();
      if (!msg.ok()) return Fail(peer, id, msg.status());
      if (!Permit(request, Permission::kManageUsers, {}, "user " + msg->spec.name.substr(0, 64))) return;
      if (Status valid = ValidateUpdateUser(*msg); !valid.ok()) return Fail(peer, id, valid);
      const std::string name = msg->spec.name;
      const UserSpec* existing = state_.FindUser(name);
      UserSpec before = existing ? *existing : UserSpec{name};
      const std::string_view op = NameOf(msg->op);
      ProposeAudited(state::UpdateUserCmd{std::move(msg).value()},
                        [this, peer, id, name, op, before](const state::ApplyResult& result) {
                          if (!result.status.ok()) return Fail(peer, id, result.status);
                          spdlog::info("user updated user={} op={}", name, op);
                          const UserSpec* user = state_.FindUser(name);
                          Reply(peer, MakeFrame(id, proposer_.epoch(), UpdateUserReply{user ? *user : before}));
                        });
      return;
    }
    case MessageType::kListUsers: {
      if (!Permit(request, Permission::kReadUsers, {}, "users")) return;
      return AfterBarrier(peer, id, [this, peer, id] {
        ListUsersReply reply;
        for (const auto& [name, user] : state_.users()) reply.users.push_back(user);
        Reply(peer, MakeFrame(id, proposer_.epoch(), reply));
      });
    }
    case MessageType::kListAudit: {
      auto msg = envelope.Body<ListAudit>();
      if (!msg.ok()) return Fail(peer, id, msg.status());
      if (!Permit(request, Permission::kReadAudit, {}, "audit")) return;
      return AfterBarrier(peer, id, [this, peer, id, msg = *msg] {
        ListAuditReply reply;
        const auto& audit = state_.audit();
        reply.first_kept_seq = audit.empty() ? 0 : audit.front().seq;
        reply.last_seq = msg.after_seq;
        const uint32_t limit = std::clamp<uint32_t>(msg.limit, 1, kMaxAuditPage);
        for (const auto& entry : audit) {
          if (entry.seq <= msg.after_seq) continue;
          if (reply.entries.size() >= limit) break;
          reply.entries.push_back(entry);
          reply.last_seq = entry.seq;
        }
        Reply(peer, MakeFrame(id, proposer_.epoch(), reply));
      });
    }
    default:
      return Fail(peer, id, Status::UnknownType("not a users request"));
  }
}

}  // namespace gpool::control
