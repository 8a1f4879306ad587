// DrainRouter: what a coordinator ROUTER socket (clients' or workers') has
// received, read without blocking, at most `max_frames` messages a turn so
// one flood cannot hold the loop. A message is one frame after the peer's
// identity; its sender is the ZAP handler's name for the connection (the
// "User-Id" property; none without CurveZMQ), parsed as a Principal. A
// message of several frames, or from a connection nobody authenticated,
// gets a typed error from `reject` and goes no further; the rest go to
// `deliver`.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <zmq.hpp>

#include "control/principal.h"
#include "protocol/base/status.h"

namespace gpool::control {

using FrameHandler = std::function<void(const std::string& peer, std::string_view bytes, const Principal& sender)>;
using FrameRejecter = std::function<void(const std::string& peer, const Status& why)>;

void DrainRouter(zmq::socket_t& socket, int max_frames, const FrameHandler& deliver, const FrameRejecter& reject);

}  // namespace gpool::control
