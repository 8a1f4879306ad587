// ProbeHandshake: connects to a CURVE server once and says whether its ZAP
// handler admitted the key, without sending a message.
//
// The outcome comes from the socket monitor's handshake events, so a test
// (or an operator's check) waits for the event itself, not for a guess at
// how long a handshake takes.
//
// Thread-safety: opens its own sockets in `context`; call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <zmq.hpp>

#include "protocol/base/status.h"
#include "protocol/security/keys.h"

namespace gpool::security {

enum class Handshake {
  kAdmitted,  // ZMQ_EVENT_HANDSHAKE_SUCCEEDED
  kRefused,   // ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: the ZAP handler said no
  kFailed,    // another handshake failure (wrong server key, protocol error)
  kTimeout,   // no outcome within the deadline (nothing listening?)
};

std::string_view HandshakeName(Handshake outcome);

// `own` with an empty secret key: a plaintext (NULL mechanism) connection.
Result<Handshake> ProbeHandshake(zmq::context_t& context, const std::string& endpoint, const KeyPair& own,
                                 std::string_view server_public_key, int64_t timeout_ms);

}  // namespace gpool::security
