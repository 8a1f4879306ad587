#include "control/session_lease_driver.h"

#include <string>

#include <spdlog/spdlog.h>

#include "control/state/commands.h"

namespace gpool::control {

void SessionLeaseDriver::Tick(int64_t now_ms) {
  if (now_ms < next_check_ms_) return;
  next_check_ms_ = now_ms + kCheckEveryMs;
  const int64_t wall = clock_->WallMs();
  // Every session, once a second (the state's index of them: a scan of
  // every job was milliseconds on the loop at 100,000 jobs).
  for (uint64_t id : state_.session_jobs()) {
    const state::JobRecord* found = state_.FindJob(JobId(id));
    if (found == nullptr) continue;
    const state::JobRecord& job = *found;
    if (IsTerminal(job.state) || job.cancel_requested) continue;
    const state::SessionRuntime* runtime = job.session();
    const int64_t renewed = runtime != nullptr ? runtime->renew_ms : job.submit_ms;
    const uint64_t lease = job.spec.session.LeaseMs();
    if (wall - renewed <= static_cast<int64_t>(lease) || in_flight_.count(id) != 0) continue;
    in_flight_.insert(id);
    const std::string reason = "lease expired: not renewed for " + std::to_string((wall - renewed) / 1000) +
                               " s (lease " + std::to_string(lease / 1000) + " s)";
    spdlog::info("session lease expired job={} renewed_ms={} lease_ms={}", id, renewed, lease);
    proposer_.Propose(state::CancelJobCmd{id, grace_ms_, reason},
                      [this, id, generation = generation_](const state::ApplyResult& result) {
                        if (generation != generation_) return;
                        in_flight_.erase(id);
                        if (!result.status.ok()) {
                          spdlog::warn("session expiry not committed job={} error=\"{}\"", id,
                                       result.status.ToString());
                        }
                      });
  }
}

void SessionLeaseDriver::Reset() {
  ++generation_;
  in_flight_.clear();
  next_check_ms_ = 0;
}

}  // namespace gpool::control
