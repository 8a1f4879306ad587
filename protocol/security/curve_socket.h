// Turning a ZeroMQ socket into a CurveZMQ server or client.
//
// A server socket gets its own key pair, a ZAP domain and, where libzmq has
// the (draft) option, ZMQ_ZAP_ENFORCE_DOMAIN. A CURVE server with no ZAP
// handler in its context admits any client that knows its public key, which
// is no authentication at all: so the ZAP handler (zap_handler.h) is bound
// before any server socket, always; enforcement, where available, makes a
// missing handler admit nobody instead.
//
// Call these before bind/connect: CURVE options apply to connections made
// afterwards only.
//
// Thread-safety: like the socket's.
#pragma once

#include <string_view>

#include <zmq.hpp>

#include "protocol/base/status.h"
#include "protocol/security/keys.h"

namespace gpool::security {

// The ZAP domains of the coordinator's three listening sockets.
inline constexpr std::string_view kClientsDomain = "clients";
inline constexpr std::string_view kWorkersDomain = "workers";
inline constexpr std::string_view kPeersDomain = "peers";

// InvalidArgument when a key is not Z85 or the domain is empty;
// Unavailable without CURVE.
Status MakeCurveServer(zmq::socket_t& socket, const KeyPair& own, std::string_view zap_domain);
// Whether this libzmq takes ZMQ_ZAP_ENFORCE_DOMAIN (a draft option in 4.3).
bool ZapEnforceDomainSupported();
Status MakeCurveClient(zmq::socket_t& socket, const KeyPair& own, std::string_view server_public_key);

}  // namespace gpool::security
