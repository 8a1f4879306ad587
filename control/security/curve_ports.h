// SecureRouters: a coordinator's client and worker ROUTERs made CurveZMQ
// servers behind one ZAP handler whose answers come from a KeyDirectory
// (docs/operations.md "Keys").
//
// The handler is started before either socket becomes a server, and both
// before any bind: a CURVE server with no handler admits anyone, and a
// handshake refused before the keys are known is never retried by libzmq.
#pragma once

#include <memory>
#include <string>

#include <zmq.hpp>

#include "control/security/key_directory.h"
#include "protocol/base/status.h"
#include "protocol/security/keys.h"
#include "protocol/security/zap_handler.h"

namespace gpool::control {

struct CurveRouters {
  std::unique_ptr<KeyDirectory> keys;
  std::unique_ptr<security::ZapHandler> zap;
};

// An empty secret key is --insecure: nothing is started and both are null.
// FailedPrecondition when libzmq has no CURVE.
Result<CurveRouters> SecureRouters(zmq::context_t& context, zmq::socket_t& clients, zmq::socket_t& workers,
                                   const security::KeyPair& keys, WorkerEnrolment enrolment,
                                   const std::string& admin_key);

}  // namespace gpool::control
