#include "control/security/curve_ports.h"

#include <spdlog/spdlog.h>

#include "protocol/security/curve_socket.h"

namespace gpool::control {

Result<CurveRouters> SecureRouters(zmq::context_t& context, zmq::socket_t& clients, zmq::socket_t& workers,
                                   const security::KeyPair& keys, WorkerEnrolment enrolment,
                                   const std::string& admin_key) {
  CurveRouters out;
  if (keys.secret_key.empty()) return out;
  if (!security::CurveAvailable()) {
    return Status::FailedPrecondition("libzmq was built without CURVE (libsodium): run with --insecure or "
                                      "install a libzmq with CURVE");
  }
  out.keys = std::make_unique<KeyDirectory>(enrolment);
  out.keys->SetAdminKey(admin_key);
  GPOOL_ASSIGN_OR_RETURN(out.zap, security::ZapHandler::Start(context, [directory = out.keys.get()](
                                                                          std::string_view domain,
                                                                          std::string_view key) {
                           return directory->Authorize(domain, key);
                         }));
  GPOOL_RETURN_IF_ERROR(security::MakeCurveServer(clients, keys, security::kClientsDomain));
  GPOOL_RETURN_IF_ERROR(security::MakeCurveServer(workers, keys, security::kWorkersDomain));
  spdlog::info("curve on public_key={} worker_enrolment={} admin_key={}", keys.public_key,
               WorkerEnrolmentName(enrolment), admin_key.empty() ? "-" : admin_key);
  return out;
}

}  // namespace gpool::control
