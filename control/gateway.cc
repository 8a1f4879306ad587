#include "control/gateway.h"

#include <algorithm>
#include <cassert>

#include <spdlog/spdlog.h>

#include "control/frames.h"
#include "control/gateway/credit_endpoint.h"
#include "control/gateway/enrolment_endpoint.h"
#include "control/gateway/nodes_endpoint.h"
#include "control/gateway/queues_endpoint.h"
#include "control/gateway/sessions_endpoint.h"
#include "control/gateway/tokens_endpoint.h"
#include "control/gateway/usage_endpoint.h"
#include "control/gateway/users_endpoint.h"
#include "protocol/envelope_peek.h"
#include "protocol/message_type.h"

namespace gpool::control {

Gateway::Gateway(const GatewayOptions& options, const state::ClusterState& state, const WorkerTable& workers,
                 WorkerRelay& relay, Outbox& outbox, Proposer& proposer)
    : inflight_(options.max_inflight_per_key),
      answering_(outbox, inflight_),
      ctx_(options, state, workers, relay, answering_, proposer) {
  auto cluster = std::make_unique<ClusterEndpoint>(ctx_);
  auto watch = std::make_unique<WatchEndpoint>(ctx_);
  auto snapshot = std::make_unique<SnapshotEndpoint>(ctx_);
  cluster_ = cluster.get();
  watch_ = watch.get();
  snapshot_ = snapshot.get();
  endpoints_.push_back(std::make_unique<JobsEndpoint>(ctx_));
  endpoints_.push_back(std::make_unique<SessionsEndpoint>(ctx_));
  endpoints_.push_back(std::make_unique<NodesEndpoint>(ctx_));
  endpoints_.push_back(std::make_unique<QueuesEndpoint>(ctx_));
  endpoints_.push_back(std::make_unique<UsersEndpoint>(ctx_));
  auto exec = std::make_unique<ExecEndpoint>(ctx_);
  exec_ = exec.get();
  endpoints_.push_back(std::move(exec));
  endpoints_.push_back(std::make_unique<UsageEndpoint>(ctx_));
  endpoints_.push_back(std::make_unique<CreditEndpoint>(ctx_));
  endpoints_.push_back(std::make_unique<EnrolmentEndpoint>(ctx_, options.new_join_token));
  endpoints_.push_back(std::make_unique<TokensEndpoint>(ctx_));
  endpoints_.push_back(std::move(cluster));
  endpoints_.push_back(std::move(watch));
  endpoints_.push_back(std::move(snapshot));
  for (const auto& endpoint : endpoints_) Route(endpoint.get());
}

void Gateway::Route(Endpoint* endpoint) {
  for (MessageType type : endpoint->Serves()) {
    auto& slot = routes_[static_cast<uint8_t>(type)];
    assert(slot == nullptr && "each message type has one endpoint");
    slot = endpoint;
  }
}

void Gateway::OnFrame(const std::string& peer, std::string_view bytes, int64_t now_ms, const Principal& principal) {
  Proposer& proposer = ctx_.proposer();
  const uint64_t epoch = proposer.epoch();
  auto envelope = DecodeEnvelope(bytes, ctx_.options().limits);
  if (!envelope.ok()) {
    spdlog::info("client request rejected bytes={} error=\"{}\"", bytes.size(), envelope.status().ToString());
    ctx_.Reply(peer, MakeError(0, epoch, envelope.status()));
    return;
  }
  const uint64_t id = envelope->header().request_id;
  // What Permit approved is audited only if the endpoint goes on to propose
  // it (a request refused as invalid after that changes nothing).
  struct EndFrame {
    RequestContext& ctx;
    ~EndFrame() { ctx.EndFrame(); }
  } end_frame{ctx_};
  ctx_.BeginFrame(now_ms);
  auto actor = ctx_.ResolveActor(principal, *envelope);
  if (!actor.ok()) {
    ctx_.Reply(peer, MakeError(id, epoch, actor.status()));
    return;
  }
  // Issue 48: one key's unanswered requests are bounded before anything
  // is queued for it; the refusal is answered now.
  const std::string limited_key = !actor->key.empty() ? actor->key
                                  : actor->token_id.empty() ? std::string() : "token " + actor->token_id;
  if (!limited_key.empty() && HeldToLimits(*actor)) {
    if (Status room = inflight_.Admit(limited_key, peer, id, now_ms); !room.ok()) return ctx_.Fail(peer, id, room);
  }
  if (!proposer.leading()) {
    const std::string leader = proposer.leader_client_address();
    // An operator sees an election (or a lost quorum) rather than a timeout.
    if (envelope->type() == MessageType::kClusterStatus && leader.empty()) {
      return ctx_.Reply(peer, MakeFrame(id, epoch, cluster_->StatusNow()));
    }
    return ctx_.Fail(peer, id, NotLeaderStatus(leader));
  }
  Endpoint* endpoint = routes_[static_cast<uint8_t>(envelope->type())];
  if (endpoint == nullptr) {
    ctx_.Reply(peer, MakeError(id, epoch,
                               Status::UnknownType(std::string(MessageTypeName(envelope->type())) +
                                                   " is not a client request")));
    return;
  }
  endpoint->Handle(Request{peer, id, envelope->type(), *actor}, *envelope, now_ms);
}

void Gateway::Tick(int64_t now_ms) {
  for (const auto& endpoint : endpoints_) endpoint->Tick(now_ms);
  inflight_.Expire(now_ms);
}

bool Gateway::HeldToLimits(const Actor& actor) const {
  return !Authorize(actor, Permission::kManageUsers, {}, ctx_.state()).allowed;
}

bool Gateway::IsAdminPrincipal(const Principal& principal) const {
  // As ResolveActor decides who a user key is, without its cluster-token
  // check (a connection's first frame may be anything).
  if (principal.kind != Principal::Kind::kUser) return false;
  if (!ctx_.options().admin_key.empty() && principal.key == ctx_.options().admin_key) return true;
  const UserSpec* user = ctx_.state().FindUser(principal.name);
  if (user == nullptr || std::find(user->keys.begin(), user->keys.end(), principal.key) == user->keys.end()) {
    return false;
  }
  Actor actor;
  actor.kind = Actor::Kind::kUser;
  actor.name = user->name;
  actor.user = user;
  actor.key = principal.key;
  return !HeldToLimits(actor);
}

size_t Gateway::exec_streams_open() const { return exec_->streams().open(); }

void Gateway::AnsweringOutbox::ToClient(const std::string& peer, std::string frame) {
  if (auto id = PeekRequestId(frame)) inflight_.Answered(peer, *id);
  out_.ToClient(peer, std::move(frame));
}

}  // namespace gpool::control
