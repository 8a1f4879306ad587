#include "protocol/security/curve_socket.h"

#include <string>

namespace gpool::security {
namespace {

constexpr int kZapEnforceDomainOption = 93;  // ZMQ_ZAP_ENFORCE_DOMAIN, a draft in libzmq 4.3

}  // namespace

Status MakeCurveServer(zmq::socket_t& socket, const KeyPair& own, std::string_view zap_domain) {
  if (!CurveAvailable()) return Status::Unavailable("libzmq was built without CURVE (libsodium)");
  if (!IsZ85Key(own.public_key) || !IsZ85Key(own.secret_key)) {
    return Status::InvalidArgument("a CURVE server needs its own Z85 key pair");
  }
  if (zap_domain.empty()) return Status::InvalidArgument("a CURVE server needs a ZAP domain");
  try {
    socket.set(zmq::sockopt::curve_server, 1);
    socket.set(zmq::sockopt::curve_secretkey, std::string(own.secret_key));
    socket.set(zmq::sockopt::zap_domain, std::string(zap_domain));
  } catch (const zmq::error_t& e) {
    return Status::Internal(std::string("making a CURVE server socket: ") + e.what());
  }
  // ZMQ_ZAP_ENFORCE_DOMAIN (93) is a draft option: set it where the library
  // has it. Where it has not, the server still authenticates only because
  // the ZAP handler is bound first (the coordinator refuses to open a
  // secured socket without one); the option makes a missing handler admit
  // nobody rather than everybody.
  const int enforce = 1;
  (void)zmq_setsockopt(socket.handle(), kZapEnforceDomainOption, &enforce, sizeof(enforce));
  return Status::Ok();
}

bool ZapEnforceDomainSupported() {
  zmq::context_t context(1);
  zmq::socket_t socket(context, zmq::socket_type::router);
  const int enforce = 1;
  const bool supported = zmq_setsockopt(socket.handle(), kZapEnforceDomainOption, &enforce, sizeof(enforce)) == 0;
  socket.close();
  return supported;
}

Status MakeCurveClient(zmq::socket_t& socket, const KeyPair& own, std::string_view server_public_key) {
  if (!CurveAvailable()) return Status::Unavailable("libzmq was built without CURVE (libsodium)");
  if (!IsZ85Key(own.public_key) || !IsZ85Key(own.secret_key)) {
    return Status::InvalidArgument("a CURVE client needs its own Z85 key pair");
  }
  if (!IsZ85Key(server_public_key)) return Status::InvalidArgument("the server's public key is not a Z85 key");
  try {
    socket.set(zmq::sockopt::curve_serverkey, std::string(server_public_key));
    socket.set(zmq::sockopt::curve_publickey, std::string(own.public_key));
    socket.set(zmq::sockopt::curve_secretkey, std::string(own.secret_key));
  } catch (const zmq::error_t& e) {
    return Status::Internal(std::string("making a CURVE client socket: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace gpool::security
