#include "control/frame_intake.h"

#include <vector>

namespace gpool::control {

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
    deliver(peer, std::string_view(static_cast<const char*>(parts[0].data()), parts[0].size()), *principal);
  }
}

}  // namespace gpool::control
