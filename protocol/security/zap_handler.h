// ZapHandler: the ZAP (RFC 27) handler that decides who a CURVE server
// socket lets in.
//
// libzmq asks the handler bound at inproc://zeromq.zap.01 in the server
// socket's context about every handshake: domain (the socket's ZAP domain)
// and the client's public key. The handler asks the authorizer; a name
// admits the connection with that name as its User-Id, which libzmq attaches
// to every message of the connection (zmq_msg_gets "User-Id"); nullopt
// refuses it (status 400) and the client never gets a frame through.
//
// ZAP requests carry no trustworthy claim of the client's (the identity
// frame is the server socket's routing id), so the authorizer decides from
// the domain and the key alone.
//
// Lifetime: Start binds the handler's socket on the calling thread before it
// returns, so server sockets bound afterwards are covered from their first
// handshake; then one thread answers requests until the handler is
// destroyed, which stops and joins it (an actor: a thread plus a pipe). Keep
// it alive as long as any server socket of the context.
//
// Thread-safety: the authorizer runs on the handler's thread and must be
// safe against whatever the owner does meanwhile (KeyDirectory locks).
// admitted()/refused() may be read from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <zmq.hpp>

#include "protocol/base/status.h"

namespace gpool::security {

inline constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";

// The User-Id to admit the key as, or nullopt to refuse it.
using Authorizer =
    std::function<std::optional<std::string>(std::string_view domain, std::string_view public_key_z85)>;

class ZapHandler {
 public:
  // Unavailable when the endpoint is taken (another handler in the context)
  // or CURVE is missing.
  static Result<std::unique_ptr<ZapHandler>> Start(zmq::context_t& context, Authorizer authorizer);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  uint64_t admitted() const { return admitted_.load(); }
  uint64_t refused() const { return refused_.load(); }
  uint64_t malformed() const { return malformed_.load(); }

 private:
  ZapHandler(zmq::context_t& context, Authorizer authorizer);
  void Run();
  // Reads one request (all its frames) and sends exactly one reply, as the
  // REP socket requires even for a request that makes no sense.
  void Answer();

  Authorizer authorizer_;
  zmq::socket_t socket_;  // REP at kZapEndpoint; the thread's after Start
  zmq::socket_t stop_send_;
  zmq::socket_t stop_recv_;
  std::atomic<uint64_t> admitted_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> malformed_{0};
  std::thread thread_;
};

}  // namespace gpool::security
