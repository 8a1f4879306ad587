// HttpServer: the one HTTP listener of a gpool process (the coordinator's
// metrics, JSON API and dashboard; the worker's metrics), over cpp-httplib,
// the HTTP library Debian keeps, rather than hand-written HTTP parsing.
//
// It only carries requests: one handler gets every GET and POST and returns
// the whole response, so routing, authentication and the work itself stay
// with the caller (which usually posts the work to its loop thread through a
// LoopInbox). Bodies are capped (413 beyond max_body_bytes), slow clients
// time out, and requests run on a small fixed pool of threads, so a flood of
// scrapes or hostile connections can neither wedge nor fill the process.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "protocol/base/status.h"

namespace gpool::http {

struct HttpRequest {
  std::string method;  // GET | POST
  std::string path;    // without the query
  std::multimap<std::string, std::string> params;  // the query's, decoded
  std::string bearer;  // "Authorization: Bearer <this>"; "" when absent
  std::string body;
  std::string remote_address;
  std::string cookie;  // the "Cookie" header as sent; "" when absent
  // The first value of query parameter `name`, or `fallback`.
  std::string Param(const std::string& name, const std::string& fallback = "") const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;

  static HttpResponse Text(int status, std::string body);
  static HttpResponse Json(int status, std::string body);
  // A typed error as JSON: {"error": {"code": "<StatusCode name>", "message": ...}},
  // with the HTTP status that matches the code.
  static HttpResponse Error(const Status& status);
};

// The HTTP status for a gpool StatusCode (401 unauthenticated, 403
// permission denied, 404 not found, 503 unavailable or not leader, ...).
int HttpStatusOf(StatusCode code);

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// TLS for the port (cpp-httplib over OpenSSL). Plain HTTP when cert_file is
// empty; the callers decide whether that is allowed (CheckHttpTlsFlags below).
struct HttpTlsOptions {
  std::string cert_file;       // PEM certificate chain
  std::string key_file;        // PEM private key
  std::string client_ca_file;  // PEM CAs; set: a client must present a certificate one of them signed
  bool enabled() const { return !cert_file.empty(); }
};

// The --http-cert / --http-key / --http-client-ca / --http-insecure rule
// shared by the coordinator and the worker (issue 48): with an address, the
// port serves HTTPS (a cert and its key; a client CA needs them) or, only
// with --http-insecure, plain HTTP, on every address, loopback included;
// neither is an InvalidArgument naming both options, and both contradict.
// Without an address (HTTP off) none of these flags may be given: they
// would change nothing.
Status CheckHttpTlsFlags(const std::string& address, const HttpTlsOptions& tls, bool insecure);

struct HttpServerOptions {
  HttpTlsOptions tls;
  // host:port; port 0 takes an ephemeral one (address() says which).
  std::string address = "127.0.0.1:0";
  size_t max_body_bytes = 1 << 20;
  size_t threads = 4;
  int timeout_ms = 10'000;  // reading a request, writing a response, idle keep-alive
};

class HttpServer {
 public:
  // Binds, then serves on a background thread until destroyed.
  static Result<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // host:port as bound (the real port when 0 was asked for).
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  bool tls() const { return tls_; }

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string address_;
  int port_ = 0;
  bool tls_ = false;
};

// Splits "host:port" ("[v6]:port" too; port 0 binds any free port) with the
// shared endpoint parser (protocol/base/endpoint.h); InvalidArgument naming
// the address and the reason when it is not one.
Result<std::pair<std::string, int>> ParseHostPort(const std::string& address);

}  // namespace gpool::http
