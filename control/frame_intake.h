// DrainRouter: what a coordinator ROUTER socket (clients' or workers') has
// received, read without blocking, at most `max_frames` messages a turn so
// one flood cannot hold the loop. A message is one frame after the peer's
// identity; its sender is the ZAP handler's name for the connection (the
// "User-Id" property; none without CurveZMQ), parsed as a Principal. A
// message of several frames, or from a connection nobody authenticated,
// gets a typed error from `reject` and goes no further; the rest go to
// `deliver`.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include <zmq.hpp>

#include "control/principal.h"
#include "protocol/base/status.h"

namespace gpool::control {

// `source_fd`: the connection's fd the message came on (ZMQ_SRCFD; -1 when
// unknown), for the count of connections per key (control/connection_ledger.h).
using FrameHandler =
    std::function<void(const std::string& peer, std::string_view bytes, const Principal& sender, int source_fd)>;
using FrameRejecter = std::function<void(const std::string& peer, const Status& why)>;

// Sets a coordinator ROUTER's limits and binds it; returns the endpoint bound
// (the port chosen, for an ephemeral one). Frames past max_frame_bytes get a
// typed error from the decoder; frames far past it are not even buffered (the
// peer is disconnected instead, without a word), so the cut is never below
// what clients may send (kMinReadableFrameBytes). `what` names the port in
// the error (Unavailable) when the bind fails.
Result<std::string> BindRouter(zmq::socket_t& socket, const std::string& endpoint, size_t max_frame_bytes,
                               std::string_view what);

void DrainRouter(zmq::socket_t& socket, int max_frames, const FrameHandler& deliver, const FrameRejecter& reject);

}  // namespace gpool::control
