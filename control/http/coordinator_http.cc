#include "control/http/coordinator_http.h"
#include "control/authz.h"

#include <charconv>
#include <chrono>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "protocol/message_type.h"

namespace gpool::control {

namespace {

constexpr std::string_view kApiPrefix = "/api/v1/";

http::HttpResponse Unauthenticated(const Status& status) {
  http::HttpResponse response = http::HttpResponse::Error(status);
  response.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"gpool\"");
  return response;
}

http::HttpResponse TimedOut() {
  return http::HttpResponse::Error(
      Status::DeadlineExceeded("the coordinator did not answer in time (busy, or shutting down)"));
}

}  // namespace

std::string QueryToJson(const std::multimap<std::string, std::string>& params) {
  nlohmann::json body = nlohmann::json::object();
  for (const auto& [name, value] : params) {
    int64_t number = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (!value.empty() && error == std::errc() && end == value.data() + value.size()) {
      body[name] = number;
    } else if (value == "true" || value == "false") {
      body[name] = value == "true";
    } else {
      body[name] = value;
    }
  }
  return body.dump();
}

Result<std::unique_ptr<CoordinatorHttp>> CoordinatorHttp::Start(const CoordinatorHttpOptions& options,
                                                                 LoopInbox& inbox, CoordinatorHttpHooks hooks) {
  std::unique_ptr<CoordinatorHttp> front(new CoordinatorHttp(options, inbox, std::move(hooks)));
  CoordinatorHttp* self = front.get();
  auto server =
      http::HttpServer::Start(options.server, [self](const http::HttpRequest& request) { return self->Handle(request); });
  if (!server.ok()) return server.status();
  front->server_ = std::move(server).value();
  return front;
}

CoordinatorHttp::~CoordinatorHttp() {
  // Stop taking requests before the hooks (and the loop they run on) go.
  server_.reset();
}

http::HttpResponse CoordinatorHttp::Handle(const http::HttpRequest& request) {
  if (request.path == "/healthz") return http::HttpResponse::Text(200, "ok\n");
  if (request.path == "/readyz") return Readiness();
  if (request.path == "/metrics") return Metrics(request);
  if (request.path == "/ui/session" && request.method == "POST") return SignIn(request);
  if (request.path == "/ui/session/end" && request.method == "POST") return SignOut(request);
  if (request.path.rfind(kApiPrefix, 0) == 0) {
    return Api(request, std::string_view(request.path).substr(kApiPrefix.size()));
  }
  if (hooks_.dashboard) {
    if (auto page = hooks_.dashboard(request.path)) return *page;
  }
  return http::HttpResponse::Error(Status::NotFound("no such page: " + request.path.substr(0, 200)));
}

http::HttpResponse CoordinatorHttp::Metrics(const http::HttpRequest& request) {
  auto result = inbox_.Call<Result<std::string>>(
      [this, bearer = request.bearer, session = SessionIdOfCookie(request.cookie)]() -> Result<std::string> {
        bool via_session = false;
        auto caller = Authenticate(bearer, session, &via_session);
        if (!caller.ok()) return caller.status();
        if (Status allowed = hooks_.may_read_cluster(*caller); !allowed.ok()) return allowed;
        return hooks_.render_metrics();
      },
      std::chrono::milliseconds(options_.request_timeout_ms));
  if (!result) return TimedOut();
  if (!result->ok()) {
    spdlog::info("http request refused path=/metrics remote={} error=\"{}\"", request.remote_address,
                 result->status().ToString());
    return result->status().code() == StatusCode::kUnauthenticated ? Unauthenticated(result->status())
                                                                    : http::HttpResponse::Error(result->status());
  }
  http::HttpResponse response;
  response.content_type = "text/plain; version=0.0.4; charset=utf-8";
  response.body = std::move(result).value().value();
  return response;
}

http::HttpResponse CoordinatorHttp::Readiness() {
  if (!hooks_.readiness) return http::HttpResponse::Text(200, "ready\n");
  auto ready = inbox_.Call<Status>(hooks_.readiness, std::chrono::milliseconds(options_.readiness_timeout_ms));
  if (!ready) {
    return http::HttpResponse::Text(503, "not ready: the coordinator's loop did not answer within " +
                                             std::to_string(options_.readiness_timeout_ms) + " ms\n");
  }
  if (!ready->ok()) return http::HttpResponse::Text(503, "not ready: " + ready->message() + "\n");
  return http::HttpResponse::Text(200, "ready\n");
}

http::HttpResponse CoordinatorHttp::Api(const http::HttpRequest& request, std::string_view type) {
  const std::string body = request.method == "POST" ? request.body : QueryToJson(request.params);
  auto done = std::make_shared<std::promise<BridgeReply>>();
  std::future<BridgeReply> reply = done->get_future();
  const bool posted = inbox_.Post([this, bearer = request.bearer, session = SessionIdOfCookie(request.cookie),
                                    type = std::string(type), body, done] {
    bool via_session = false;
    auto caller = Authenticate(bearer, session, &via_session);
    if (!caller.ok()) {
      done->set_value(BridgeReply{caller.status(), "", "", ""});
      return;
    }
    // A session cookie is sent by the browser on its own: it reads only, so
    // no page can make a signed-in browser change anything.
    const auto message_type = MessageTypeFromName(type);
    if (via_session && (!message_type || MutatingRequest(*message_type))) {
      done->set_value(BridgeReply{Status::PermissionDenied("the dashboard's session reads only: send " + type +
                                                           " with \"Authorization: Bearer <write token>\""),
                                  "", "", ""});
      return;
    }
    hooks_.bridge->Request(type, body, caller->principal, caller->token, done);
  });
  if (!posted || reply.wait_for(std::chrono::milliseconds(options_.request_timeout_ms)) != std::future_status::ready) {
    return TimedOut();
  }
  BridgeReply answer;
  try {
    answer = reply.get();
  } catch (const std::future_error&) {
    return TimedOut();  // dropped unanswered (shutdown)
  }
  if (!answer.status.ok()) {
    if (answer.status.code() == StatusCode::kUnauthenticated) return Unauthenticated(answer.status);
    http::HttpResponse response = http::HttpResponse::Error(answer.status);
    if (!answer.leader.empty()) response.headers.emplace_back("X-Gpool-Leader", answer.leader);
    return response;
  }
  http::HttpResponse response = http::HttpResponse::Json(200, std::move(answer.json));
  response.headers.emplace_back("X-Gpool-Reply", answer.type);
  return response;
}

int64_t CoordinatorHttp::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<HttpCaller> CoordinatorHttp::Authenticate(const std::string& bearer, const std::string& session_id,
                                                 bool* via_session) {
  *via_session = false;
  if (!bearer.empty() || session_id.empty() || !hooks_.authenticate_token_id) return hooks_.authenticate(bearer);
  auto session = sessions_.Find(session_id, NowMs());
  if (!session) return Status::Unauthenticated("the session ended; sign in again with an API token");
  auto caller = hooks_.authenticate_token_id(session->token_id);
  if (!caller.ok()) {
    sessions_.Close(session_id);  // its token is gone: so is the session
    return caller.status();
  }
  *via_session = true;
  return caller;
}

http::HttpResponse CoordinatorHttp::SignIn(const http::HttpRequest& request) {
  auto body = nlohmann::json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object() || !body.contains("token") || !body["token"].is_string()) {
    return http::HttpResponse::Error(Status::InvalidArgument("sign in with a JSON body {\"token\": \"gpt_...\"}"));
  }
  const std::string token = body["token"].get<std::string>();
  auto caller = inbox_.Call<Result<HttpCaller>>([this, token] { return hooks_.authenticate(token); },
                                                std::chrono::milliseconds(options_.request_timeout_ms));
  if (!caller) return TimedOut();
  if (!caller->ok()) {
    spdlog::info("http sign-in refused remote={} error=\"{}\"", request.remote_address, caller->status().ToString());
    return Unauthenticated(caller->status());
  }
  const HttpCaller& who = caller->value();
  if (who.principal.kind != Principal::Kind::kToken || !hooks_.authenticate_token_id) {
    return http::HttpResponse::Error(
        Status::FailedPrecondition("dashboard sessions need an API token of a secured cluster; send the credential "
                                   "as \"Authorization: Bearer\" instead"));
  }
  if (who.scope == TokenScope::kMetrics) {
    return http::HttpResponse::Error(Status::PermissionDenied(
        "a metrics token opens /metrics only; sign in with a read token (`gpool token create --scope read`)"));
  }
  const int64_t now = NowMs();
  const std::string id = sessions_.Open(who.principal.key, who.principal.name, who.expires_ms, now);
  auto session = sessions_.Find(id, now);
  if (!session) return http::HttpResponse::Error(Status::Unauthenticated("the token expires now"));
  spdlog::info("http session opened user={} token={} remote={} sessions={}", who.principal.name, who.principal.key,
               request.remote_address, sessions_.size());
  nlohmann::json reply = {{"user", who.principal.name}, {"expires_ms", session->expires_ms}};
  http::HttpResponse response = http::HttpResponse::Json(200, reply.dump());
  response.headers.emplace_back("Set-Cookie", SessionSetCookie(id, (session->expires_ms - now) / 1000));
  response.headers.emplace_back("Cache-Control", "no-store");
  return response;
}

http::HttpResponse CoordinatorHttp::SignOut(const http::HttpRequest& request) {
  const std::string id = SessionIdOfCookie(request.cookie);
  const bool ended = !id.empty() && sessions_.Close(id);
  http::HttpResponse response = http::HttpResponse::Json(200, ended ? R"({"ended":true})" : R"({"ended":false})");
  response.headers.emplace_back("Set-Cookie", SessionSetCookie("", 0));
  return response;
}

}  // namespace gpool::control
