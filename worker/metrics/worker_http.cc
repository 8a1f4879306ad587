#include "worker/metrics/worker_http.h"

#include <string>

#include "protocol/base/token_file.h"

namespace gpool::worker {

namespace {

http::HttpResponse Readiness(const WorkerHttpOptions& options, LoopInbox& inbox, const std::function<Status()>& ready) {
  auto answer = inbox.Call<Status>(ready, std::chrono::milliseconds(options.readiness_timeout_ms));
  if (!answer) {
    return http::HttpResponse::Text(503, "not ready: the worker's loop did not answer within " +
                                             std::to_string(options.readiness_timeout_ms) + " ms\n");
  }
  if (!answer->ok()) return http::HttpResponse::Text(503, "not ready: " + answer->message() + "\n");
  return http::HttpResponse::Text(200, "ready\n");
}

}  // namespace

Result<std::unique_ptr<WorkerHttp>> WorkerHttp::Start(const WorkerHttpOptions& options, LoopInbox& inbox,
                                                       std::function<std::string()> render,
                                                       std::function<Status()> ready) {
  std::unique_ptr<WorkerHttp> front(new WorkerHttp());
  auto handler = [options, &inbox, render = std::move(render),
                  ready = std::move(ready)](const http::HttpRequest& request) {
    if (request.path == "/healthz") return http::HttpResponse::Text(200, "ok\n");
    if (request.path == "/readyz") return Readiness(options, inbox, ready);
    if (request.path != "/metrics") {
      return http::HttpResponse::Error(Status::NotFound("no such page: " + request.path.substr(0, 200)));
    }
    if (!options.token.empty() && !ConstantTimeEquals(request.bearer, options.token)) {
      http::HttpResponse refused =
          http::HttpResponse::Error(Status::Unauthenticated("wrong or missing scrape token (Authorization: Bearer)"));
      refused.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"gpool-worker\"");
      return refused;
    }
    auto page = inbox.Call<std::string>(render, std::chrono::milliseconds(options.timeout_ms));
    if (!page) return http::HttpResponse::Error(Status::DeadlineExceeded("the worker did not answer in time"));
    http::HttpResponse response;
    response.content_type = "text/plain; version=0.0.4; charset=utf-8";
    response.body = std::move(*page);
    return response;
  };
  http::HttpServerOptions server_options;
  server_options.address = options.address;
  server_options.threads = 2;
  server_options.tls = options.tls;
  auto server = http::HttpServer::Start(server_options, std::move(handler));
  if (!server.ok()) {
    // A certificate problem names its own flag; anything else is the address's.
    if (server.status().message().rfind("--http-", 0) == 0) return server.status();
    return Status(server.status().code(), "--http-address: " + server.status().message());
  }
  front->server_ = std::move(server).value();
  return front;
}

}  // namespace gpool::worker
