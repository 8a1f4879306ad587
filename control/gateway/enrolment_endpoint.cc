#include "control/gateway/enrolment_endpoint.h"

#include <random>

#include <spdlog/spdlog.h>

#include "protocol/base/sha256.h"
#include "protocol/model/node_update.h"
#include "protocol/validate.h"

namespace gpool::control {
namespace {

std::string RandomJoinToken() {
  std::random_device random;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token = "gpool-join-";
  for (int i = 0; i < 6; ++i) {
    uint32_t word = random();
    for (int nibble = 0; nibble < 8; ++nibble, word >>= 4) token += kHex[word & 0xf];
  }
  return token;
}

// Tokens as clients see them: never the hash, which would let a reader of a
// listing try guesses offline.
JoinTokenInfo Public(JoinTokenInfo token) {
  token.hash.clear();
  return token;
}

}  // namespace

void EnrolmentEndpoint::Handle(const Request& request, const Envelope& envelope, int64_t now_ms) {
  (void)now_ms;
  auto msg = ctx_.Decode<Enrolment>(request, envelope);
  if (!msg) return;
  const std::string what = "enrolment " + std::string(NameOf(msg->op)) + (msg->node.empty() ? "" : " " + msg->node);
  if (!ctx_.Permit(request, Permission::kManageNodes, {}, what)) return;
  switch (msg->op) {
    case EnrolmentOp::kListPending:
      ctx_.AfterBarrier(request, [this, request] {
        EnrolmentReply reply;
        for (const auto& [key, pending] : ctx_.state().pending_enrolments()) reply.pending.push_back(pending);
        ctx_.Answer(request, reply);
      });
      return;
    case EnrolmentOp::kListTokens:
      ctx_.AfterBarrier(request, [this, request] {
        EnrolmentReply reply;
        for (const auto& [id, token] : ctx_.state().join_tokens()) reply.tokens.push_back(Public(token));
        ctx_.Answer(request, reply);
      });
      return;
    case EnrolmentOp::kApprove:
    case EnrolmentOp::kReject: return OnDecide(request, std::move(*msg));
    case EnrolmentOp::kCreateToken: return OnCreateToken(request, std::move(*msg));
    case EnrolmentOp::kRevokeToken: return OnRevokeToken(request, std::move(*msg));
  }
}

void EnrolmentEndpoint::OnDecide(const Request& request, Enrolment msg) {
  UpdateNode name_check;
  name_check.node = msg.node;
  if (Status valid = ValidateUpdateNode(name_check); !valid.ok()) return ctx_.Fail(request, valid);
  // What the decision is about, as it stands before the command: the reply
  // names the keys approved or rejected.
  EnrolmentReply reply;
  for (const auto& [key, pending] : ctx_.state().pending_enrolments()) {
    if (pending.node == msg.node && (msg.fingerprint.empty() || pending.fingerprint == msg.fingerprint)) {
      reply.pending.push_back(pending);
    }
  }
  if (reply.pending.empty()) {
    return ctx_.Fail(request, Status::NotFound("no pending enrolment for node '" + msg.node + "'" +
                                               (msg.fingerprint.empty() ? "" : " with key " + msg.fingerprint) +
                                               " (`gpool node pending` lists them)"));
  }
  state::EnrolmentCmd cmd;
  cmd.op = msg.op == EnrolmentOp::kApprove ? state::EnrolmentCmdOp::kApprove : state::EnrolmentCmdOp::kReject;
  cmd.node = msg.node;
  cmd.fingerprint = msg.fingerprint;
  const bool approve = msg.op == EnrolmentOp::kApprove;
  ctx_.ProposeAudited(std::move(cmd), [this, request, approve, reply = std::move(reply),
                                       actor = request.actor.name](const state::ApplyResult& result) {
    if (!result.status.ok()) return ctx_.Fail(request, result.status);
    for (const auto& pending : reply.pending) {
      spdlog::info("node enrolment {} node={} key={} by={}", approve ? "approved" : "rejected", pending.node,
                   pending.fingerprint, actor);
    }
    ctx_.Answer(request, reply);
  });
}

void EnrolmentEndpoint::OnCreateToken(const Request& request, Enrolment msg) {
  if (msg.ttl_ms == 0 || msg.ttl_ms > kMaxTokenTtlMs) {
    return ctx_.Fail(request, Status::InvalidArgument("ttl: between 1 ms and 7 days (--ttl 1h)"));
  }
  if (!msg.labels.empty()) {
    UpdateNode label_check;
    label_check.node = "join-token";
    label_check.op = NodeUpdateOp::kLabel;
    label_check.labels = msg.labels;
    if (Status valid = ValidateUpdateNode(label_check); !valid.ok()) return ctx_.Fail(request, valid);
  }
  const std::string secret = new_token_ ? new_token_() : RandomJoinToken();
  state::EnrolmentCmd cmd;
  cmd.op = state::EnrolmentCmdOp::kCreateToken;
  cmd.token.hash = Sha256::Of(secret);
  cmd.token.id = cmd.token.hash.substr(0, 12);
  cmd.token.expires_ms = RequestContext::WallNowMs() + static_cast<int64_t>(msg.ttl_ms);
  cmd.token.creator = request.actor.name;
  cmd.token.labels = std::move(msg.labels);
  const std::string id = cmd.token.id;
  ctx_.ProposeAudited(std::move(cmd), [this, request, secret, id](const state::ApplyResult& result) {
    if (!result.status.ok()) return ctx_.Fail(request, result.status);
    EnrolmentReply reply;
    reply.token = secret;
    if (auto it = ctx_.state().join_tokens().find(id); it != ctx_.state().join_tokens().end()) {
      reply.tokens.push_back(Public(it->second));
    }
    spdlog::info("join token created id={} by={}", id, request.actor.name);
    ctx_.Answer(request, reply);
  });
}

void EnrolmentEndpoint::OnRevokeToken(const Request& request, Enrolment msg) {
  if (msg.token_id.empty() || msg.token_id.size() > 64) {
    return ctx_.Fail(request, Status::InvalidArgument("token_id: the id `gpool admin join-token list` shows"));
  }
  state::EnrolmentCmd cmd;
  cmd.op = state::EnrolmentCmdOp::kRevokeToken;
  cmd.token.id = msg.token_id;
  ctx_.ProposeAudited(std::move(cmd), [this, request, id = msg.token_id](const state::ApplyResult& result) {
    if (!result.status.ok()) return ctx_.Fail(request, result.status);
    EnrolmentReply reply;
    if (auto it = ctx_.state().join_tokens().find(id); it != ctx_.state().join_tokens().end()) {
      reply.tokens.push_back(Public(it->second));
    }
    spdlog::info("join token revoked id={} by={}", id, request.actor.name);
    ctx_.Answer(request, reply);
  });
}

}  // namespace gpool::control
