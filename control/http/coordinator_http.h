// CoordinatorHttp: the coordinator's HTTP port (--http-address).
//
//   GET  /healthz               200 "ok" while the process serves (no credential)
//   GET  /readyz                200 "ready", or 503 "not ready: <why>" (no
//                               credential; readiness.h says when)
//   GET  /metrics               Prometheus text format (needs read-cluster)
//   GET  /api/v1/<Request>      the JSON API: a read request, query
//   POST /api/v1/<Request>      parameters or a JSON body as its fields,
//                               answered by the Gateway as over ZeroMQ
//   GET  /, /ui/...             the dashboard (control/dashboard/dashboard.h)
//   POST /ui/session            sign in: body {"token": "gpt_..."} (a read or
//                               write token); answers with an HttpOnly,
//                               Secure, SameSite=Strict session cookie
//                               (http_sessions.h)
//   POST /ui/session/end        sign out: the session ends on the server
//
// Authentication (issue 48): on a secured cluster the bearer credential is
// an API token (`gpool token create`; protocol/model/api_token.h), looked up
// by its SHA-256 in the replicated state; its scope bounds what it opens
// (metrics: /metrics only; read: + the API's reads and the dashboard;
// write: + mutations) and its owner's roles decide the rest, exactly as on
// the ZeroMQ port. A CurveZMQ secret key sent as the bearer is refused (401)
// with how to make a token. On an --insecure cluster the bearer is the
// cluster token (none configured: open, as the ZeroMQ port is). The port
// serves TLS with --http-cert/--http-key (http_server.h).
//
// Every request's work runs on the coordinator's loop thread through the
// LoopInbox; the HTTP threads only wait (at most request_timeout_ms, then 504).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "control/http/gateway_bridge.h"
#include "control/http/http_sessions.h"
#include "control/principal.h"
#include "protocol/base/loop_inbox.h"
#include "protocol/http/http_server.h"
#include "protocol/model/api_token.h"

namespace gpool::control {

// Who an HTTP request speaks for, resolved on the loop thread.
struct HttpCaller {
  Principal principal;
  std::string token;  // the envelope token the gateway checks
  // kToken callers: what the token opens (the gateway checks it again
  // against the committed token, request by request).
  TokenScope scope = TokenScope::kWrite;
  int64_t expires_ms = 0;  // kToken: the token's expiry (0: never)
};

// What the coordinator lends its HTTP port; all called on the loop thread.
struct CoordinatorHttpHooks {
  std::function<Result<HttpCaller>(const std::string& bearer)> authenticate;
  // A dashboard session's token, by id (still there, not expired, its
  // owner still a user): what a session cookie authenticates as.
  std::function<Result<HttpCaller>(const std::string& token_id)> authenticate_token_id;
  // Ok when the caller may read cluster-wide figures (metrics).
  std::function<Status(const HttpCaller& caller)> may_read_cluster;
  std::function<std::string()> render_metrics;
  // Ok when this replica is ready (readiness.h), else why not. Null: /readyz
  // answers as /healthz does.
  std::function<Status()> readiness;
  GatewayBridge* bridge = nullptr;
  // Static dashboard files, or null (no dashboard): a response for the
  // path, or nullopt when it is not one of the dashboard's.
  std::function<std::optional<http::HttpResponse>(const std::string& path)> dashboard;
};

struct CoordinatorHttpOptions {
  http::HttpServerOptions server;
  int64_t request_timeout_ms = 10'000;
  // A readiness probe waits at most this long for the loop thread; a loop
  // too busy to answer in time is not ready.
  int64_t readiness_timeout_ms = 2'000;
  size_t max_sessions = 1024;  // dashboard sessions (http_sessions.h); the oldest go first
};

class CoordinatorHttp {
 public:
  static Result<std::unique_ptr<CoordinatorHttp>> Start(const CoordinatorHttpOptions& options, LoopInbox& inbox,
                                                        CoordinatorHttpHooks hooks);
  ~CoordinatorHttp();
  const std::string& address() const { return server_->address(); }

 private:
  CoordinatorHttp(const CoordinatorHttpOptions& options, LoopInbox& inbox, CoordinatorHttpHooks hooks)
      : options_(options), inbox_(inbox), hooks_(std::move(hooks)), sessions_(options.max_sessions) {}
  http::HttpResponse Handle(const http::HttpRequest& request);
  http::HttpResponse Metrics(const http::HttpRequest& request);
  http::HttpResponse Readiness();
  http::HttpResponse Api(const http::HttpRequest& request, std::string_view type);
  http::HttpResponse SignIn(const http::HttpRequest& request);
  http::HttpResponse SignOut(const http::HttpRequest& request);
  // Who the request speaks for, on the loop thread: its bearer, or else its
  // session cookie (read-only: `via_session` is set).
  Result<HttpCaller> Authenticate(const std::string& bearer, const std::string& session_id, bool* via_session);
  int64_t NowMs() const;

  CoordinatorHttpOptions options_;
  LoopInbox& inbox_;
  CoordinatorHttpHooks hooks_;
  HttpSessions sessions_;
  std::unique_ptr<http::HttpServer> server_;
};

// The JSON body a GET's query parameters make: numbers and true/false typed,
// everything else a string ("?limit=5&include_finished=false").
std::string QueryToJson(const std::multimap<std::string, std::string>& params);

}  // namespace gpool::control
