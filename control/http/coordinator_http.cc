#include "control/http/coordinator_http.h"

#include <charconv>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

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
      [this, bearer = request.bearer]() -> Result<std::string> {
        auto caller = hooks_.authenticate(bearer);
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
  const bool posted = inbox_.Post([this, bearer = request.bearer, type = std::string(type), body, done] {
    auto caller = hooks_.authenticate(bearer);
    if (!caller.ok()) {
      done->set_value(BridgeReply{caller.status(), "", "", ""});
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

}  // namespace gpool::control
