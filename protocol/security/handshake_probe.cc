#include "protocol/security/handshake_probe.h"

#include <atomic>
#include <chrono>
#include <cstring>

#include "protocol/security/curve_socket.h"

namespace gpool::security {
namespace {

std::atomic<uint64_t> g_monitor_serial{0};

}  // namespace

std::string_view HandshakeName(Handshake outcome) {
  switch (outcome) {
    case Handshake::kAdmitted: return "admitted";
    case Handshake::kRefused: return "refused";
    case Handshake::kFailed: return "failed";
    case Handshake::kTimeout: return "timeout";
  }
  return "unknown";
}

Result<Handshake> ProbeHandshake(zmq::context_t& context, const std::string& endpoint, const KeyPair& own,
                                 std::string_view server_public_key, int64_t timeout_ms) {
  zmq::socket_t socket(context, zmq::socket_type::dealer);
  socket.set(zmq::sockopt::linger, 0);
  if (!own.secret_key.empty()) GPOOL_RETURN_IF_ERROR(MakeCurveClient(socket, own, server_public_key));
  const std::string monitor_endpoint = "inproc://gpool-handshake-probe-" + std::to_string(g_monitor_serial++);
  if (zmq_socket_monitor(socket.handle(), monitor_endpoint.c_str(),
                         ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                             ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0) {
    return Status::Internal(std::string("zmq_socket_monitor: ") + zmq_strerror(zmq_errno()));
  }
  zmq::socket_t monitor(context, zmq::socket_type::pair);
  monitor.set(zmq::sockopt::linger, 0);
  monitor.connect(monitor_endpoint);
  try {
    socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return Status::InvalidArgument("cannot connect to " + endpoint + ": " + e.what());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  Handshake outcome = Handshake::kTimeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    zmq::pollitem_t item{monitor.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, left);
    if (!(item.revents & ZMQ_POLLIN)) continue;
    zmq::message_t event;
    if (!monitor.recv(event, zmq::recv_flags::none)) continue;
    while (monitor.get(zmq::sockopt::rcvmore)) {
      zmq::message_t rest;
      (void)monitor.recv(rest, zmq::recv_flags::none);
    }
    if (event.size() < 2) continue;
    uint16_t id = 0;
    std::memcpy(&id, event.data(), sizeof(id));
    if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) outcome = Handshake::kAdmitted;
    else if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) outcome = Handshake::kRefused;
    else outcome = Handshake::kFailed;
    break;
  }
  zmq_socket_monitor(socket.handle(), nullptr, 0);
  return outcome;
}

}  // namespace gpool::security
