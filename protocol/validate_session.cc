#include "protocol/validate_session.h"

#include <string>

#include "protocol/validate_users.h"

namespace gpool {

Status ValidateSessionSpec(const JobSpec& spec) {
  const SessionSpec& session = spec.session;
  if (!session.enabled) return Status::Ok();
  if (spec.tasks.size() != 1 || spec.tasks[0].replicas != 1) {
    return Status::InvalidArgument("session: a session is one task (one group of one replica)");
  }
  const Resources& res = spec.tasks[0].resources;
  if (res.gpus == 0) {
    return Status::InvalidArgument("session: a session asks for GPUs (gpus) or a share of one (gpu_memory_mib, "
                                   "gpu_compute_pct)");
  }
  if (!IsZ85Key(session.owner_key)) {
    return Status::InvalidArgument("session.owner_key: not a CurveZMQ public key (40 Z85 characters)");
  }
  // Below a second a session closes before its client's first call; past a
  // week it is a node, not a session.
  constexpr uint64_t kMinMs = 1'000, kMaxMs = 7ull * 24 * 3'600'000;
  if (session.idle_timeout_ms < kMinMs || session.idle_timeout_ms > kMaxMs) {
    return Status::InvalidArgument("session.idle_timeout_ms: " + std::to_string(session.idle_timeout_ms) +
                                   " is not 1 s to 7 days");
  }
  if (session.lease_ms != 0 && (session.lease_ms < kMinMs || session.lease_ms > kMaxMs)) {
    return Status::InvalidArgument("session.lease_ms: " + std::to_string(session.lease_ms) +
                                   " is not 1 s to 7 days (or 0: the idle timeout)");
  }
  if (spec.restart.policy != "never") {
    return Status::InvalidArgument("restart.policy: a session is never restarted (its client holds pointers into "
                                   "the GPU memory it had), so it must be \"never\", not \"" +
                                   spec.restart.policy.substr(0, 32) + "\"");
  }
  return Status::Ok();
}

}  // namespace gpool
