#include "control/gateway.h"

#include <cassert>

#include <spdlog/spdlog.h>

#include "control/frames.h"
#include "control/gateway/enrolment_endpoint.h"
#include "control/gateway/exec_endpoint.h"
#include "control/gateway/nodes_endpoint.h"
#include "control/gateway/queues_endpoint.h"
#include "control/gateway/sessions_endpoint.h"
#include "control/gateway/tokens_endpoint.h"
#include "control/gateway/usage_endpoint.h"
#include "control/gateway/users_endpoint.h"
#include "protocol/message_type.h"

namespace gpool::control {

Gateway::Gateway(const GatewayOptions& options, const state::ClusterState& state, const WorkerTable& workers,
                 WorkerRelay& relay, Outbox& outbox, Proposer& proposer)
    : ctx_(options, state, workers, relay, outbox, proposer) {
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
  endpoints_.push_back(std::make_unique<ExecEndpoint>(ctx_));
  endpoints_.push_back(std::make_unique<UsageEndpoint>(ctx_));
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
}

}  // namespace gpool::control
