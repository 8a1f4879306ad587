#include "control/gateway/users_endpoint.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "protocol/message_type.h"
#include "protocol/messages_users.h"
#include "protocol/model/users.h"
#include "protocol/validate_users.h"

namespace gpool::control {
namespace {

constexpr uint32_t kMaxAuditPage = 1000;

}  // namespace

void UsersEndpoint::Handle(const Request& request, const Envelope& envelope, int64_t now_ms) {
  (void)now_ms;
  switch (request.type) {
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
      return ctx_.Answer(request, reply);
    }
    case MessageType::kBootstrap: {
      auto msg = envelope.Body<Bootstrap>();
      if (!msg.ok()) return ctx_.Fail(request, msg.status());
      if (!ctx_.Permit(request, Permission::kBootstrap, {}, "user " + msg->admin.name.substr(0, 64))) return;
      UserSpec admin = std::move(msg->admin);
      // The caller's own key becomes the admin's: bootstrap names nobody else.
      admin.keys.clear();
      if (!request.actor.key.empty()) admin.keys.push_back(request.actor.key);
      admin.roles = {RoleGrant{Role::kAdmin, ""}};
      if (Status valid = ValidateUserSpec(admin); !valid.ok()) return ctx_.Fail(request, valid.WithContext("admin"));
      if (ctx_.state().HasAdmin()) {
        return ctx_.Fail(request, Status::FailedPrecondition("the cluster already has an admin (bootstrap runs once)"));
      }
      const std::string name = admin.name;
      state::BootstrapCmd cmd{std::move(admin), ctx_.options().uid_first, ctx_.options().uid_last};
      ctx_.ProposeAudited(std::move(cmd), [this, request, name](const state::ApplyResult& result) {
        if (!result.status.ok()) return ctx_.Fail(request, result.status);
        spdlog::warn("cluster bootstrapped admin={}", name);
        const UserSpec* user = ctx_.state().FindUser(name);
        ctx_.Answer(request, UpdateUserReply{user ? *user : UserSpec{name}});
      });
      return;
    }
    case MessageType::kUpdateUser: {
      auto msg = envelope.Body<UpdateUser>();
      if (!msg.ok()) return ctx_.Fail(request, msg.status());
      if (!ctx_.Permit(request, Permission::kManageUsers, {}, "user " + msg->spec.name.substr(0, 64))) return;
      if (Status valid = ValidateUpdateUser(*msg); !valid.ok()) return ctx_.Fail(request, valid);
      // The record it leaves is held to today's rules here, at the edge
      // (apply keeps only the state's invariants: cluster_state_users.cc).
      if (msg->op != UserOp::kDelete) {
        auto next = ctx_.state().UserAfterUpdate(*msg, RequestContext::WallNowMs());
        if (!next.ok()) return ctx_.Fail(request, next.status());
        if (Status valid = ValidateUserSpec(*next); !valid.ok()) return ctx_.Fail(request, valid);
      }
      const std::string name = msg->spec.name;
      const UserSpec* existing = ctx_.state().FindUser(name);
      UserSpec before = existing ? *existing : UserSpec{name};
      const std::string_view op = NameOf(msg->op);
      ctx_.ProposeAudited(state::UpdateUserCmd{std::move(msg).value(), ctx_.options().uid_first,
                                               ctx_.options().uid_last},
                        [this, request, name, op, before](const state::ApplyResult& result) {
                          if (!result.status.ok()) return ctx_.Fail(request, result.status);
                          spdlog::info("user updated user={} op={}", name, op);
                          const UserSpec* user = ctx_.state().FindUser(name);
                          ctx_.Answer(request, UpdateUserReply{user ? *user : before});
                        });
      return;
    }
    case MessageType::kListUsers: {
      if (!ctx_.Permit(request, Permission::kReadUsers, {}, "users")) return;
      return ctx_.AfterBarrier(request, [this, request] {
        ListUsersReply reply;
        for (const auto& [name, user] : ctx_.state().users()) reply.users.push_back(user);
        ctx_.Answer(request, reply);
      });
    }
    case MessageType::kListAudit: {
      auto msg = envelope.Body<ListAudit>();
      if (!msg.ok()) return ctx_.Fail(request, msg.status());
      if (!ctx_.Permit(request, Permission::kReadAudit, {}, "audit")) return;
      return ctx_.AfterBarrier(request, [this, request, msg = *msg] {
        ListAuditReply reply;
        const auto& audit = ctx_.state().audit();
        reply.first_kept_seq = audit.empty() ? 0 : audit.front().seq;
        reply.last_seq = msg.after_seq;
        const uint32_t limit = std::clamp<uint32_t>(msg.limit, 1, kMaxAuditPage);
        for (const auto& entry : audit) {
          if (entry.seq <= msg.after_seq) continue;
          if (reply.entries.size() >= limit) break;
          reply.entries.push_back(entry);
          reply.last_seq = entry.seq;
        }
        ctx_.Answer(request, reply);
      });
    }
    default:
      return ctx_.Fail(request, Status::UnknownType("not a users request"));
  }
}

}  // namespace gpool::control
