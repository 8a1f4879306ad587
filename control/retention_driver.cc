#include "control/retention_driver.h"

#include <spdlog/spdlog.h>

#include "control/state/commands.h"

namespace gpool::control {

void RetentionDriver::Tick(int64_t now_ms) {
  if (in_flight_ || now_ms < next_check_ms_) return;
  next_check_ms_ = now_ms + policy_.check_every_ms;
  const int64_t cutoff = clock_->WallMs() - policy_.keep_ms;
  if (!state_.AnyForgettable(cutoff, policy_.keep_jobs)) return;
  in_flight_ = true;
  proposer_.Propose(state::ForgetJobsCmd{.finished_before_ms = cutoff, .keep_newest = policy_.keep_jobs},
                    [this, generation = generation_](const state::ApplyResult& result) {
                      if (generation != generation_) return;
                      in_flight_ = false;
                      if (!result.status.ok()) {
                        spdlog::warn("retention: forgetting finished jobs failed error=\"{}\"",
                                     result.status.ToString());
                        return;
                      }
                      spdlog::info("retention: finished jobs forgotten count={} kept_finished_max={} "
                                   "forgotten_total={}",
                                   result.jobs_forgotten, policy_.keep_jobs, state_.forgotten_count());
                    });
}

void RetentionDriver::Reset() {
  ++generation_;
  in_flight_ = false;
  next_check_ms_ = 0;
}

}  // namespace gpool::control
