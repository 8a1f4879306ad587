// gpool-rgpu-server's request loop: one ROUTER socket, CURVE with a ZAP
// handler that admits only the session owner's key, requests (wire.h)
// executed in order on one Session.
//
// Ends when no request came for `idle_timeout_ms` (kIdle), on SIGTERM or
// SIGINT (kSignalled); either way Run() releases everything the session
// created before it returns.
//
// Thread-safety: Run() on one thread; the ZAP handler has its own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include "protocol/base/status.h"
#include "protocol/security/keys.h"
#include "protocol/security/zap_handler.h"
#include "worker/rgpu/server/driver.h"
#include "worker/rgpu/server/session.h"

namespace gpool::rgpu {

inline constexpr const char* kZapDomain = "rgpu";

struct ServerOptions {
  std::string endpoint;                    // bound exactly ("tcp://127.0.0.1:*" picks a port: tests)
  security::KeyPair own;                   // the server's key pair
  std::string owner_key;                   // Z85: the only client admitted
  std::int64_t idle_timeout_ms = 0;        // > 0
  std::shared_ptr<spdlog::logger> logger;  // null: spdlog's default
};

enum class ServerEnd { kIdle, kSignalled };

class Server {
 public:
  // Binds and starts authenticating. InvalidArgument: a bad key or
  // endpoint; Unavailable: bind failed or CURVE missing.
  static Result<std::unique_ptr<Server>> Open(const ServerOptions& options, std::unique_ptr<Driver> driver);
  ~Server();

  // The bound endpoint (the port filled in).
  const std::string& endpoint() const { return endpoint_; }
  // Serves until idle or signalled (SIGTERM/SIGINT must be blocked in every
  // thread before the server's threads start: main() does it), then
  // releases the session.
  ServerEnd Run();

 private:
  Server(const ServerOptions& options, std::unique_ptr<Driver> driver);
  void HandleMessage(std::vector<zmq::message_t>& frames);
  // The routing id, the reply header, the outputs and the bulk chunks.
  void Reply(const zmq::message_t& routing, std::uint64_t id, CUresult result, std::uint32_t index, const Writer& out,
             std::vector<zmq::message_t> bulk);

  ServerOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<Driver> driver_;
  // Before context_: destroyed after it, when ZeroMQ has freed every chunk.
  ChunkPool chunks_;
  Session session_;
  zmq::context_t context_;
  std::unique_ptr<security::ZapHandler> zap_;
  zmq::socket_t socket_;
  std::string endpoint_;
  std::uint64_t requests_ = 0;
  std::uint64_t malformed_ = 0;
};

}  // namespace gpool::rgpu
