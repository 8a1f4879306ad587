#include "control/stop_handover.h"

#include <spdlog/spdlog.h>

namespace gpool::control {

bool StopHandover::KeepRunning(int64_t now_ms) {
  if (started_ms_ < 0) {
    started_ms_ = now_ms;
    term_ = log_.term();
    target_ = log_.HandOverLeadership();
    if (target_ == 0) return false;  // not leading, or nobody to hand to
    spdlog::info("stopping: handing leadership over first to={} term={} bound_ms={}", target_, term_, bound_ms_);
    return true;
  }
  if (target_ == 0) return false;
  const uint64_t leader = log_.leader_id();
  if (!log_.IsLeader() && leader != 0 && leader != log_.replica_id()) {
    // The new leader's first append reached us: the replies this replica
    // still sends name it, and nothing more is gained by waiting.
    spdlog::info("stopping: leadership handed over leader={} term={} took_ms={}", leader, log_.term(),
                 now_ms - started_ms_);
    return false;
  }
  if (now_ms - started_ms_ >= bound_ms_) {
    spdlog::warn("stopping without a handover: no new leader within bound_ms={} asked={} term={} (the others "
                 "elect one after their election timeout)",
                 bound_ms_, target_, log_.term());
    return false;
  }
  return true;
}

}  // namespace gpool::control
