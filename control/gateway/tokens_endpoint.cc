#include "control/gateway/tokens_endpoint.h"

#include <sodium.h>
#include <spdlog/spdlog.h>

#include "control/state/api_tokens.h"
#include "protocol/base/sha256.h"
#include "protocol/messages_tokens.h"

namespace gpool::control {
namespace {

std::string RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  randombytes_buf(raw.data(), raw.size());
  std::string hex(bytes * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
  hex.pop_back();
  return hex;
}

// What a caller may see of a token: never its hash.
ApiTokenInfo Shown(ApiTokenInfo info) {
  info.hash.clear();
  info.admin_key.clear();
  return info;
}

}  // namespace

std::string NewApiToken() { return std::string(kApiTokenPrefix) + RandomHex(kApiTokenRandomBytes); }

bool LooksLikeApiToken(std::string_view bearer) {
  if (bearer.size() != kApiTokenPrefix.size() + 2 * kApiTokenRandomBytes) return false;
  if (bearer.substr(0, kApiTokenPrefix.size()) != kApiTokenPrefix) return false;
  for (char c : bearer.substr(kApiTokenPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

void TokensEndpoint::Handle(const Request& request, const Envelope& envelope, int64_t now_ms) {
  (void)now_ms;
  // Tokens are a user's: an --insecure cluster's HTTP port takes the
  // cluster token, and a job's exec key speaks for its job only.
  if (request.actor.kind != Actor::Kind::kUser) {
    return ctx_.Fail(request, Status::PermissionDenied(
                                  "API tokens belong to users; " + request.actor.name +
                                  " is none (an --insecure cluster's HTTP port takes the cluster token)"));
  }
  switch (request.type) {
    case MessageType::kCreateToken: return Create(request, envelope);
    case MessageType::kListTokens: return List(request, envelope);
    default: return Revoke(request, envelope);
  }
}

void TokensEndpoint::Create(const Request& request, const Envelope& envelope) {
  auto msg = ctx_.Decode<CreateToken>(request, envelope);
  if (!msg) return;
  if (!request.actor.token_id.empty()) {
    ctx_.AuditRequest(request, "token", false, "a token cannot make tokens");
    return ctx_.Fail(request, Status::PermissionDenied("a token cannot make tokens: run `gpool token create` with "
                                                       "your key"));
  }
  if (msg->ttl_ms < 0 || msg->ttl_ms > kMaxTokenTtlMs) {
    return ctx_.Fail(request, Status::InvalidArgument("ttl_ms: " + std::to_string(msg->ttl_ms) +
                                                      " is not from 0 (never expires) to " +
                                                      std::to_string(kMaxTokenTtlMs) + " (366 days)"));
  }
  if (!ctx_.Permit(request, Permission::kManageTokens, Target{request.actor.name, "", 0}, "token")) return;
  const std::string token = NewApiToken();
  ApiTokenInfo info;
  info.id = "tok-" + RandomHex(6);
  info.owner = request.actor.name;
  info.scope = msg->scope;
  info.created_ms = RequestContext::WallNowMs();
  info.expires_ms = msg->ttl_ms == 0 ? 0 : info.created_ms + msg->ttl_ms;
  info.hash = Sha256::Of(token);
  // The --admin-key's holder is no user record (request_context.h).
  info.configured_admin = ctx_.IsConfiguredAdmin(request.actor);
  if (info.configured_admin) info.admin_key = ctx_.options().admin_key;
  ctx_.ProposeAudited(state::TokenCmd{TokenOp::kCreate, info},
                      [this, request, info, token](const state::ApplyResult& result) {
                        if (!result.status.ok()) return ctx_.Fail(request, result.status);
                        spdlog::info("api token created user={} id={} scope={} expires_ms={}", info.owner, info.id,
                                     NameOf(info.scope), info.expires_ms);
                        CreateTokenReply reply;
                        reply.token = token;
                        reply.info = Shown(info);
                        ctx_.Answer(request, reply);
                      });
}

void TokensEndpoint::List(const Request& request, const Envelope& envelope) {
  auto msg = ctx_.Decode<ListTokens>(request, envelope);
  if (!msg) return;
  if (msg->all && !ctx_.Permit(request, Permission::kReadUsers, {}, "tokens")) return;
  ctx_.AfterBarrier(request, [this, request, all = msg->all] {
    ListTokensReply reply;
    for (const auto& [id, token] : ctx_.state().api_tokens().tokens()) {
      if (!all && token.owner != request.actor.name) continue;
      ApiTokenInfo shown = Shown(token);
      if (ctx_.options().token_last_used) shown.last_used_ms = ctx_.options().token_last_used(id);
      reply.tokens.push_back(std::move(shown));
    }
    ctx_.Answer(request, reply);
  });
}

void TokensEndpoint::Revoke(const Request& request, const Envelope& envelope) {
  auto msg = ctx_.Decode<RevokeToken>(request, envelope);
  if (!msg) return;
  const ApiTokenInfo* token = ctx_.state().api_tokens().Find(msg->id);
  // Another user's token is NotFound unless the caller may manage it, so ids
  // cannot be probed.
  if (token == nullptr ||
      !Authorize(request.actor, Permission::kManageTokens, Target{token->owner, "", 0}, ctx_.state()).allowed) {
    return ctx_.Fail(request, Status::NotFound("no token " + msg->id.substr(0, 64) + " of yours (`gpool token list`)"));
  }
  if (!ctx_.Permit(request, Permission::kManageTokens, Target{token->owner, "", 0}, "token " + token->id)) return;
  ApiTokenInfo revoked;
  revoked.id = token->id;
  revoked.owner = token->owner;
  revoked.scope = token->scope;
  ctx_.ProposeAudited(state::TokenCmd{TokenOp::kRevoke, revoked},
                      [this, request, was = Shown(*token), who = request.actor.name](const state::ApplyResult& result) {
                        if (!result.status.ok()) return ctx_.Fail(request, result.status);
                        spdlog::info("api token revoked user={} id={} owner={}", who, was.id, was.owner);
                        RevokeTokenReply reply;
                        reply.info = was;
                        ctx_.Answer(request, reply);
                      });
}

}  // namespace gpool::control
