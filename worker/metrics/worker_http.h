// WorkerHttp: the worker's HTTP port, /healthz, /readyz and /metrics.
//
//   GET /healthz   200 "ok" while the process serves
//   GET /readyz    200 "ready" while the node is registered with a
//                  coordinator, else 503 "not ready: <why>"
//   GET /metrics   Prometheus text format (the scrape token, below)
//
// /healthz and /readyz need no credential: they reveal nothing.
//
// The page is rendered on the agent's loop thread (LoopInbox), where the
// link, the tasks and the health checks live. A worker has no user
// directory, so its scrape credential is a bearer token from a file
// (--metrics-token-file), compared in constant time; without one the page
// is open to whoever reaches the address (127.0.0.1 by default).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "protocol/base/loop_inbox.h"
#include "protocol/http/http_server.h"

namespace gpool::worker {

struct WorkerHttpOptions {
  std::string address = "127.0.0.1:0";
  std::string token;  // empty: no credential required
  http::HttpTlsOptions tls;  // --http-cert/--http-key/--http-client-ca; empty: plain HTTP
  int64_t timeout_ms = 10'000;
  // A readiness probe waits at most this long for the loop thread.
  int64_t readiness_timeout_ms = 2'000;
};

class WorkerHttp {
 public:
  // `render` makes the metrics page and `ready` says whether the worker is
  // ready (Ok) or why not; both run on the loop thread, through `inbox`.
  static Result<std::unique_ptr<WorkerHttp>> Start(const WorkerHttpOptions& options, LoopInbox& inbox,
                                                   std::function<std::string()> render,
                                                   std::function<Status()> ready);
  const std::string& address() const { return server_->address(); }

 private:
  WorkerHttp() = default;
  std::unique_ptr<http::HttpServer> server_;
};

}  // namespace gpool::worker
