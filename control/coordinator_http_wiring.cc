// The coordinator's HTTP port: how an HTTP request is authenticated, what
// /metrics renders, and the bridge into the Gateway (control/http/).
#include <spdlog/spdlog.h>

#include "control/authz.h"
#include "control/coordinator.h"
#include "control/dashboard/dashboard.h"
#include "control/gateway/tokens_endpoint.h"
#include "control/http/readiness.h"
#include "control/metrics/coordinator_metrics.h"
#include "protocol/base/sha256.h"
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
  if (keys_) {
    hooks.authenticate_token_id = [this](const std::string& id) -> Result<HttpCaller> {
      const ApiTokenInfo* token = state_.api_tokens().Find(id);
      if (token == nullptr) return Status::Unauthenticated("the session's API token was revoked; sign in again");
      return HttpCallerOf(*token);
    };
  }
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
  http_options.server.tls = {options_.http_cert, options_.http_key, options_.http_client_ca};
  // main.cc refuses these flags with their reasons; a coordinator started
  // in-process (tests, the simulator) meets the same rule here.
  if (Status tls = CheckHttpFlags(options_); !tls.ok()) return tls;
  auto started = CoordinatorHttp::Start(http_options, *inbox_, std::move(hooks));
  if (!started.ok()) {
    if (started.status().message().rfind("--http-", 0) == 0) return started.status();
    return Status(started.status().code(), "--http-address: " + started.status().message());
  }
  http_ = std::move(started).value();
  spdlog::info("http listening address={} tls={} client_certs={} security={}", http_->address(),
               http_options.server.tls.enabled(), !options_.http_client_ca.empty(), keys_ ? "api-token" : "token");
  if (!http_options.server.tls.enabled() && options_.http_insecure) {
    spdlog::warn("http serves plain HTTP address={} insecure_flag={}: API tokens and session cookies cross the "
                 "network in the clear; give --http-cert and --http-key", http_->address(), options_.http_insecure);
  }
  return Status::Ok();
}

// On a secured cluster the HTTP credential is an API token (`gpool token
// create`), never a CurveZMQ secret key: a key is its user's identity on
// every port, and whoever saw one HTTP request would hold it (issue 48).
Result<HttpCaller> Coordinator::HttpAuthenticate(const std::string& bearer) {
  HttpCaller caller;
  if (!keys_) {
    // --insecure: the bearer is the cluster token, checked by whoever acts
    // on it (the gateway, HttpMayReadCluster), as on the ZeroMQ port.
    caller.principal.kind = Principal::Kind::kInsecure;
    caller.token = bearer;
    return caller;
  }
  if (bearer.empty()) {
    return Status::Unauthenticated(
        "send an API token: \"Authorization: Bearer gpt_...\" (make one with `gpool token create`)");
  }
  if (LooksLikeApiToken(bearer)) return HttpAuthenticateToken(bearer);
  if (security::IsZ85Key(bearer)) {
    spdlog::warn("http secret key refused: a CurveZMQ secret key was sent as a bearer; its owner should treat it as "
                 "exposed and rotate it");
    return Status::Unauthenticated(
        "a secret key is never accepted over HTTP (it is your identity on every port; treat it as exposed): make "
        "an API token with `gpool token create --scope read` and send that");
  }
  return Status::Unauthenticated("the bearer credential is not an API token (gpt_ and 64 hex digits; "
                                 "`gpool token create` makes one)");
}

Result<HttpCaller> Coordinator::HttpAuthenticateToken(const std::string& bearer) {
  const ApiTokenInfo* token = state_.api_tokens().FindByHash(Sha256::Of(bearer));
  if (token == nullptr) return Status::Unauthenticated("unknown or revoked API token");
  const int64_t now = options_.clock->WallMs();
  if (token->expires_ms != 0 && token->expires_ms <= now) {
    return Status::Unauthenticated("API token " + token->id + " expired; make another with `gpool token create`");
  }
  return HttpCallerOf(*token);
}

Result<HttpCaller> Coordinator::HttpCallerOf(const ApiTokenInfo& token) {
  const int64_t now = options_.clock->WallMs();
  if (token.expires_ms != 0 && token.expires_ms <= now) {
    return Status::Unauthenticated("API token " + token.id + " expired; make another with `gpool token create`");
  }
  token_last_used_[token.id] = now;
  // Revoked tokens' entries go once they outnumber the live ones.
  if (token_last_used_.size() > 2 * state_.api_tokens().tokens().size() + 64) {
    std::erase_if(token_last_used_, [this](const auto& entry) { return !state_.api_tokens().Find(entry.first); });
  }
  HttpCaller caller;
  caller.principal.kind = Principal::Kind::kToken;
  caller.principal.name = token.owner;
  caller.principal.key = token.id;
  caller.scope = token.scope;
  caller.expires_ms = token.expires_ms;
  // The token was proved above; a cluster token configured as well
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
    case Principal::Kind::kToken: {
      // Every scope opens /metrics; the owner's roles still decide.
      const ApiTokenInfo* token = state_.api_tokens().Find(caller.principal.key);
      if (token == nullptr) return Status::Unauthenticated("API token " + caller.principal.key + " was revoked");
      if (token->configured_admin) {
        if (!options_.admin_key.empty() && token->admin_key == options_.admin_key) return Status::Ok();
        return Status::Unauthenticated("API token " + token->id + " was made with an --admin-key that is no longer set");
      }
      const UserSpec* user = state_.FindUser(token->owner);
      if (user == nullptr) return Status::Unauthenticated("user " + token->owner + " no longer exists");
      actor.kind = Actor::Kind::kUser;
      actor.name = user->name;
      actor.user = user;
      actor.token_id = token->id;
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
  for (const auto& [sink, stats] : health_->SinkStats()) {
    input.webhooks[sink] = WebhookSinkFigures{.attempts = stats.attempts,
                                              .failures = stats.failures,
                                              .delivered = stats.delivered,
                                              .given_up = stats.given_up,
                                              .skipped = stats.skipped,
                                              .queued = stats.queued};
  }
  input.key_limits.connections = client_monitor_ ? client_monitor_->ledger().counted() : 0;
  input.key_limits.inflight_requests = gateway_->inflight().open();
  input.key_limits.exec_streams = gateway_->exec_streams_open();
  return RenderCoordinatorMetrics(input);
}

}  // namespace gpool::control
