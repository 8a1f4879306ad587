// The coordinator's HTTP port: how an HTTP request is authenticated, what
// /metrics renders, and the bridge into the Gateway (control/http/).
#include <spdlog/spdlog.h>

#include "control/authz.h"
#include "control/coordinator.h"
#include "control/dashboard/dashboard.h"
#include "control/http/readiness.h"
#include "control/metrics/coordinator_metrics.h"
#include "protocol/base/token_file.h"
#include "protocol/model/users.h"
#include "protocol/security/curve_socket.h"
#include "protocol/security/keys.h"

namespace gpool::control {

namespace {

// A reply the gateway never sends is dropped after this long (its HTTP
// caller gave up at its own, shorter timeout).
constexpr int64_t kBridgeExpiryMs = 60'000;

}  // namespace

Status Coordinator::StartHttp() {
  if (options_.http_address.empty()) return Status::Ok();
  GPOOL_ASSIGN_OR_RETURN(inbox_, LoopInbox::Open());
  bridge_ = std::make_unique<GatewayBridge>(
      [this](const std::string& peer, std::string_view frame, const Principal& principal) {
        bridge_->Expire(kBridgeExpiryMs);
        gateway_->OnFrame(peer, frame, options_.clock->MonoMs(), principal);
      });
  CoordinatorHttpHooks hooks;
  hooks.authenticate = [this](const std::string& bearer) { return HttpAuthenticate(bearer); };
  hooks.may_read_cluster = [this](const HttpCaller& caller) { return HttpMayReadCluster(caller); };
  hooks.render_metrics = [this] { return RenderMetrics(); };
  hooks.readiness = [this] {
    const log::ReplicationReport r = tracker_->Replication();
    return CheckReadiness(ReadinessInput{r.replicated, r.role, r.voter, r.leader_id, r.commit_index,
                                         r.applied_index, tracker_->leading(), tracker_->removed()});
  };
  hooks.bridge = bridge_.get();
  hooks.dashboard = dashboard::Serve;  // static files; the page reads the API as its user
  CoordinatorHttpOptions http_options;
  http_options.server.address = options_.http_address;
  http_options.server.max_body_bytes = options_.max_frame_bytes;
  auto started = CoordinatorHttp::Start(http_options, *inbox_, std::move(hooks));
  if (!started.ok()) return Status(started.status().code(), "--http-address: " + started.status().message());
  http_ = std::move(started).value();
  spdlog::info("http listening address={} security={}", http_->address(), keys_ ? "bearer-key" : "token");
  return Status::Ok();
}

Result<HttpCaller> Coordinator::HttpAuthenticate(const std::string& bearer) const {
  HttpCaller caller;
  if (!keys_) {
    // --insecure: the bearer is the cluster token, checked by whoever acts
    // on it (the gateway, HttpMayReadCluster), as on the ZeroMQ port.
    caller.principal.kind = Principal::Kind::kInsecure;
    caller.token = bearer;
    return caller;
  }
  if (bearer.empty()) {
    return Status::Unauthenticated("send a user's secret key: \"Authorization: Bearer <secret key, Z85>\"");
  }
  if (!security::IsZ85Key(bearer)) {
    // cpp-httplib percent-decodes header values: a key made by another tool
    // may hold "%41", which arrives as "A" (keys gpool makes hold no '%').
    return Status::Unauthenticated(
        "the bearer credential is not a secret key (40 Z85 characters); a '%' in a key must be sent as '%25'");
  }
  auto pair = security::KeyPairOfSecret(bearer);
  if (!pair.ok()) return Status::Unauthenticated("the bearer credential is not a usable secret key");
  const std::optional<std::string> user_id = keys_->Authorize(security::kClientsDomain, pair->public_key);
  if (!user_id) return Status::Unauthenticated("key " + pair->public_key + " belongs to no user");
  std::optional<Principal> principal = Principal::Parse(*user_id);
  if (!principal || (principal->kind != Principal::Kind::kUser && principal->kind != Principal::Kind::kBootstrap)) {
    return Status::Unauthenticated("key " + pair->public_key + " is not a user's key");
  }
  caller.principal = std::move(*principal);
  // The credential was proved above; a cluster token configured as well
  // (defence in depth on the ZeroMQ port) is the coordinator's to add.
  caller.token = options_.token;
  return caller;
}

Status Coordinator::HttpMayReadCluster(const HttpCaller& caller) const {
  Actor actor;
  switch (caller.principal.kind) {
    case Principal::Kind::kInsecure:
      if (options_.token.empty() || ConstantTimeEquals(caller.token, options_.token)) return Status::Ok();
      return Status::Unauthenticated("wrong or missing token (\"Authorization: Bearer <cluster token>\")");
    case Principal::Kind::kUser: {
      if (!options_.admin_key.empty() && caller.principal.key == options_.admin_key) return Status::Ok();
      const UserSpec* user = state_.FindUser(caller.principal.name);
      if (user == nullptr) return Status::Unauthenticated("user " + caller.principal.name + " no longer exists");
      actor.kind = Actor::Kind::kUser;
      actor.name = user->name;
      actor.user = user;
      actor.key = caller.principal.key;
      break;
    }
    default:
      return Status::PermissionDenied("only users may read metrics");
  }
  const Decision decision = Authorize(actor, Permission::kReadCluster, Target{}, state_);
  if (!decision.allowed) return Status::PermissionDenied(actor.name + " may not " + decision.missing);
  return Status::Ok();
}

std::string Coordinator::RenderMetrics() const {
  metrics_->Prune();
  CoordinatorMetricsInput input;
  input.state = &state_;
  input.recorded = metrics_.get();
  input.workers = &connections_;
  input.replication = tracker_->Replication();
  input.replica_id = options_.replica_id;
  input.version = options_.version;
  input.leading = tracker_->leading();
  input.now_wall_ms = options_.clock->WallMs();
  input.per_gpu = options_.metrics_per_gpu;
  return RenderCoordinatorMetrics(input);
}

}  // namespace gpool::control
