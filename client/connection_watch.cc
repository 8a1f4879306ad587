#include "client/connection_watch.h"

#include <atomic>
#include <cstring>
#include <cstdint>
#include <vector>

#include <zmq_addon.hpp>

namespace gpool {
namespace {

// inproc names are per context; a process may hold several clients.
std::string NextMonitorAddress() {
  static std::atomic<uint64_t> next{0};
  return "inproc://gpool-client-connection-" + std::to_string(next.fetch_add(1));
}

}  // namespace

ConnectionWatch::ConnectionWatch(zmq::context_t& context, zmq::socket_t& socket) : socket_(socket) {
  const std::string address = NextMonitorAddress();
  if (zmq_socket_monitor(socket_.handle(), address.c_str(), ZMQ_EVENT_DISCONNECTED) != 0) return;
  try {
    auto events = std::make_unique<zmq::socket_t>(context, zmq::socket_type::pair);
    events->set(zmq::sockopt::linger, 0);
    events->connect(address);
    events_ = std::move(events);
  } catch (const zmq::error_t&) {
    // Without the watch the client still fails over, only after its timeouts.
    zmq_socket_monitor(socket_.handle(), nullptr, 0);
  }
}

ConnectionWatch::~ConnectionWatch() {
  if (!events_) return;
  zmq_socket_monitor(socket_.handle(), nullptr, 0);
  events_.reset();
}

zmq::pollitem_t ConnectionWatch::poll_item() {
  return zmq::pollitem_t{events_->handle(), 0, ZMQ_POLLIN, 0};
}

bool ConnectionWatch::Lost() {
  if (!events_ || lost_) return lost_;
  while (true) {
    std::vector<zmq::message_t> parts;
    if (!zmq::recv_multipart(*events_, std::back_inserter(parts), zmq::recv_flags::dontwait)) break;
    // The first frame is a 16-bit event id and a 32-bit value; only
    // ZMQ_EVENT_DISCONNECTED was asked for, but read the id anyway.
    if (!parts.empty() && parts[0].size() >= sizeof(uint16_t)) {
      uint16_t event = 0;
      std::memcpy(&event, parts[0].data(), sizeof(event));
      if (event == ZMQ_EVENT_DISCONNECTED) lost_ = true;
    }
  }
  return lost_;
}

}  // namespace gpool
