#include "protocol/http/http_server.h"

#include <fstream>
#include <thread>

#include <httplib.h>

#include "protocol/base/endpoint.h"

namespace gpool::http {

std::string HttpRequest::Param(const std::string& name, const std::string& fallback) const {
  auto it = params.find(name);
  return it == params.end() ? fallback : it->second;
}

HttpResponse HttpResponse::Text(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

HttpResponse HttpResponse::Json(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.content_type = "application/json";
  response.body = std::move(body);
  return response;
}

namespace {

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
          out += buffer;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

}  // namespace

HttpResponse HttpResponse::Error(const Status& status) {
  return Json(HttpStatusOf(status.code()), "{\"error\":{\"code\":" + JsonString(StatusCodeName(status.code())) +
                                               ",\"message\":" + JsonString(status.message()) + "}}");
}

int HttpStatusOf(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kMalformed:
    case StatusCode::kUnknownType:
    case StatusCode::kUnsupportedVersion: return 400;
    case StatusCode::kUnauthenticated: return 401;
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kStaleEpoch: return 409;
    case StatusCode::kResourceExhausted: return 413;
    case StatusCode::kUnavailable:
    case StatusCode::kNotLeader: return 503;
    case StatusCode::kDeadlineExceeded: return 504;
    case StatusCode::kInternal:
    case StatusCode::kIoError: return 500;
  }
  return 500;
}

Result<std::pair<std::string, int>> ParseHostPort(const std::string& address) {
  const auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("HTTP address \"" + address.substr(0, 128) + "\": " + why);
  };
  auto parsed = Endpoint::ParseHostPort(address, EndpointUse::kBind);
  if (!parsed.ok()) return bad(parsed.status().message());
  // ZeroMQ's wildcards mean nothing to httplib: port 0 and 0.0.0.0 / [::] say it.
  if (parsed->host == "*") return bad("'*' is not a host here; use 0.0.0.0 or [::]");
  if (address.back() == '*') return bad("expected a port from 0 to 65535");
  return std::make_pair(parsed->host, static_cast<int>(parsed->port));
}

Status CheckHttpTlsFlags(const std::string& address, const HttpTlsOptions& tls, bool insecure) {
  if (address.empty()) {
    // HTTP off: a TLS flag or --http-insecure would change nothing, and an
    // operator who gave one believes the port is on; say so instead.
    if (tls.enabled() || !tls.key_file.empty() || !tls.client_ca_file.empty() || insecure) {
      return Status::InvalidArgument("--http-cert, --http-key, --http-client-ca and --http-insecure configure the "
                                     "HTTP port, which is off: give --http-address HOST:PORT too");
    }
    return Status::Ok();
  }
  auto host_port = ParseHostPort(address);
  if (!host_port.ok()) return host_port.status();
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return Status::InvalidArgument("--http-cert and --http-key go together (the certificate and its private key)");
  }
  if (!tls.client_ca_file.empty() && !tls.enabled()) {
    return Status::InvalidArgument("--http-client-ca verifies client certificates over TLS: it needs --http-cert "
                                   "and --http-key");
  }
  if (insecure && tls.enabled()) {
    return Status::InvalidArgument("--http-insecure and --http-cert contradict each other: choose one");
  }
  if (tls.enabled() || insecure) return Status::Ok();
  // Loopback too (issue 48): a loopback port is routinely forwarded (ssh -L,
  // kubectl port-forward, a local proxy), and then its bytes cross networks
  // the process cannot see; plain HTTP is therefore always an explicit choice.
  return Status::InvalidArgument("--http-address " + address.substr(0, 128) +
                                 " would serve plain HTTP: serve it over TLS with --http-cert and --http-key, or "
                                 "pass --http-insecure to send its credentials in the clear");
}

struct HttpServer::Impl {
  std::unique_ptr<httplib::Server> server;
  std::thread thread;
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options, HttpHandler handler) {
  auto host_port = ParseHostPort(options.address);
  if (!host_port.ok()) return host_port.status();
  auto impl = std::make_unique<Impl>();
  const HttpTlsOptions& tls = options.tls;
  if (tls.enabled()) {
    // Unreadable files are named here: OpenSSL's own failure says only that
    // the context is invalid.
    for (const auto& [flag, file] : {std::pair{"--http-cert", tls.cert_file}, std::pair{"--http-key", tls.key_file},
                                     std::pair{"--http-client-ca", tls.client_ca_file}}) {
      if (!file.empty() && !std::ifstream(file).good()) {
        return Status::InvalidArgument(std::string(flag) + " " + file + ": cannot read the file");
      }
    }
    auto ssl = std::make_unique<httplib::SSLServer>(
        tls.cert_file.c_str(), tls.key_file.c_str(), tls.client_ca_file.empty() ? nullptr : tls.client_ca_file.c_str());
    if (!ssl->is_valid()) {
      return Status::InvalidArgument("--http-cert " + tls.cert_file + " / --http-key " + tls.key_file +
                                     (tls.client_ca_file.empty() ? "" : " / --http-client-ca " + tls.client_ca_file) +
                                     ": OpenSSL refused them (not PEM, or the key does not match the certificate)");
    }
    impl->server = std::move(ssl);
  } else {
    impl->server = std::make_unique<httplib::Server>();
  }
  httplib::Server& server = *impl->server;
  const size_t threads = std::max<size_t>(1, options.threads);
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_payload_max_length(options.max_body_bytes);
  const time_t seconds = options.timeout_ms / 1000;
  const time_t micros = (options.timeout_ms % 1000) * 1000;
  server.set_read_timeout(seconds, micros);
  server.set_write_timeout(seconds, micros);
  server.set_keep_alive_timeout(std::max<time_t>(1, seconds));
  auto serve = [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    HttpRequest request;
    request.method = req.method;
    request.path = req.path;
    for (const auto& [name, value] : req.params) request.params.emplace(name, value);
    const std::string authorization = req.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (authorization.compare(0, kBearer.size(), kBearer) == 0) request.bearer = authorization.substr(kBearer.size());
    request.cookie = req.get_header_value("Cookie");
    request.body = req.body;
    request.remote_address = req.remote_addr;
    HttpResponse response;
    try {
      response = handler(request);
    } catch (const std::exception& e) {
      response = HttpResponse::Error(Status::Internal(std::string("handling the request: ") + e.what()));
    }
    res.status = response.status;
    for (const auto& [name, value] : response.headers) res.set_header(name, value);
    res.set_content(std::move(response.body), response.content_type);
  };
  // httplib's default sets SO_REUSEPORT, which lets a second process bind
  // the same port and silently take half the scrapes; a port in use must be
  // an error instead.
  server.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server.Get(".*", serve);
  server.Post(".*", serve);
  int port = host_port->second;
  if (port == 0) {
    port = server.bind_to_any_port(host_port->first);
    if (port < 0) return Status::Unavailable("cannot bind HTTP on " + options.address);
  } else if (!server.bind_to_port(host_port->first, port)) {
    return Status::Unavailable("cannot bind HTTP on " + options.address + " (in use?)");
  }
  impl->thread = std::thread([&server] { server.listen_after_bind(); });
  // stop() before the thread is listening would be lost and the destructor
  // would wait forever: return only once it listens.
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  std::unique_ptr<HttpServer> result(new HttpServer(std::move(impl)));
  result->address_ = FormatHostPort(host_port->first, static_cast<uint16_t>(port));
  result->port_ = port;
  result->tls_ = tls.enabled();
  return result;
}

}  // namespace gpool::http
