#include "control/frame_intake.h"

#include <algorithm>
#include <vector>

#include "protocol/base/endpoint.h"
#include "protocol/envelope.h"

namespace gpool::control {

Result<std::string> BindRouter(zmq::socket_t& socket, const std::string& endpoint, size_t max_frame_bytes,
                               std::string_view what) {
  const int64_t max_message =
      static_cast<int64_t>(std::max<size_t>(max_frame_bytes * 4, kMinReadableFrameBytes + 64 * 1024));
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::maxmsgsize, max_message);
  socket.set(zmq::sockopt::sndhwm, 100'000);
  socket.set(zmq::sockopt::rcvhwm, 100'000);
  try {
    socket.bind(BindableEndpoint(endpoint));
  } catch (const zmq::error_t& e) {
    return Status::Unavailable("cannot bind the " + std::string(what) + " port " + endpoint + ": " + e.what());
  }
  return socket.get(zmq::sockopt::last_endpoint);
}

void DrainRouter(zmq::socket_t& socket, int max_frames, const FrameHandler& deliver, const FrameRejecter& reject) {
  for (int i = 0; i < max_frames; ++i) {
    zmq::message_t identity;
    if (!socket.recv(identity, zmq::recv_flags::dontwait)) return;
    const std::string peer = identity.to_string();
    std::vector<zmq::message_t> parts;
    while (socket.get(zmq::sockopt::rcvmore)) {
      zmq::message_t part;
      if (!socket.recv(part, zmq::recv_flags::dontwait)) break;
      parts.push_back(std::move(part));
    }
    if (parts.size() != 1) {
      reject(peer, Status::Malformed("expected exactly one frame per message, got " + std::to_string(parts.size())));
      continue;
    }
    const char* user_id = zmq_msg_gets(parts[0].handle(), "User-Id");
    auto principal = Principal::Parse(user_id == nullptr ? "" : user_id);
    if (!principal) {
      reject(peer, Status::Unauthenticated("connection not authenticated"));
      continue;
    }
    const int fd = zmq_msg_get(parts[0].handle(), ZMQ_SRCFD);
    deliver(peer, std::string_view(static_cast<const char*>(parts[0].data()), parts[0].size()), *principal, fd);
  }
}

}  // namespace gpool::control
