#include "control/client_monitor.h"

#include <cstdint>
#include <cstring>

#include <spdlog/spdlog.h>

namespace gpool::control {

Result<std::unique_ptr<ClientMonitor>> ClientMonitor::Start(zmq::context_t& context, zmq::socket_t& router,
                                                            uint32_t max_per_key) {
  std::unique_ptr<ClientMonitor> monitor(new ClientMonitor(context, max_per_key));
  // One name per monitor: tests run several coordinators in one process.
  const std::string endpoint =
      "inproc://gpool-client-monitor-" + std::to_string(reinterpret_cast<uintptr_t>(monitor.get()));
  if (zmq_socket_monitor(router.handle(), endpoint.c_str(), ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) != 0) {
    return Status::Internal(std::string("zmq_socket_monitor on the client port: ") + zmq_strerror(zmq_errno()));
  }
  try {
    monitor->events_.set(zmq::sockopt::rcvhwm, 0);
    monitor->events_.set(zmq::sockopt::linger, 0);
    monitor->events_.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return Status::Internal(std::string("connecting to the client port's monitor: ") + e.what());
  }
  return monitor;
}

void ClientMonitor::Drain(const std::function<void(const std::string& peer)>& closed) {
  for (;;) {
    // An event is two frames: 2 bytes of event and 4 of value (the fd),
    // then the endpoint.
    zmq::message_t event;
    if (!events_.recv(event, zmq::recv_flags::dontwait)) return;
    zmq::message_t address;
    if (events_.get(zmq::sockopt::rcvmore)) (void)events_.recv(address, zmq::recv_flags::dontwait);
    if (event.size() < 6) continue;
    uint16_t kind = 0;
    uint32_t value = 0;
    std::memcpy(&kind, event.data(), sizeof(kind));
    std::memcpy(&value, static_cast<const char*>(event.data()) + sizeof(kind), sizeof(value));
    const int fd = static_cast<int>(value);
    if (kind == ZMQ_EVENT_ACCEPTED) {
      ledger_.Opened(fd);
    } else if (kind == ZMQ_EVENT_DISCONNECTED) {
      if (auto peer = ledger_.Closed(fd)) closed(*peer);
    }
  }
}

Status ClientMonitor::Admit(int fd, const std::string& peer, const std::string& key,
                            const std::function<bool()>& exempt, int64_t now_ms,
                            const std::function<void(const std::string& peer)>& closed) {
  if (!ledger_.Tracks(fd)) Drain(closed);
  return ledger_.Admit(fd, peer, key, exempt, now_ms);
}

}  // namespace gpool::control
