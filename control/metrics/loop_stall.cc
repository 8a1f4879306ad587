#include "control/metrics/loop_stall.h"

#include <algorithm>

namespace gpool::control {

std::vector<double> LoopIterationBounds() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1, 2.5, 5};
}

void LoopStallMeter::PollCalled(int64_t now_ns) {
  if (returned_ns_ < 0) return;
  const int64_t turn_ns = std::max<int64_t>(0, now_ns - returned_ns_);
  returned_ns_ = -1;
  iterations_.Observe(static_cast<double>(turn_ns) / 1e9);
  if (window_start_ns_ < 0) window_start_ns_ = now_ns;
  if (now_ns - window_start_ns_ >= kWindowNs) {
    // A window with no turn at all (an idle gap longer than one) leaves
    // nothing to remember from before it.
    previous_max_ns_ = now_ns - window_start_ns_ >= 2 * kWindowNs ? 0 : current_max_ns_;
    current_max_ns_ = 0;
    window_start_ns_ = now_ns;
  }
  current_max_ns_ = std::max(current_max_ns_, turn_ns);
}

double LoopStallMeter::window_max_seconds() const {
  return static_cast<double>(std::max(current_max_ns_, previous_max_ns_)) / 1e9;
}

}  // namespace gpool::control
