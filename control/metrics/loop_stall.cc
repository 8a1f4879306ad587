#include "control/metrics/loop_stall.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace gpool::control {

std::vector<double> LoopIterationBounds() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1, 2.5, 5};
}

void LoopStallMeter::PollCalled(int64_t now_ns) {
  if (returned_ns_ < 0) return;
  const int64_t turn_ns = std::max<int64_t>(0, now_ns - returned_ns_);
  if (turn_ns >= kSlowTurnNs) {
    // Each phase from the mark before it; what follows the last mark is "rest".
    std::string phases;
    int64_t from = returned_ns_;
    auto add = [&](const char* name, int64_t at_ns) {
      if (!phases.empty()) phases += ' ';
      phases += name;
      phases += ':' + std::to_string(std::max<int64_t>(0, at_ns - from) / 1'000'000);
      from = at_ns;
    };
    for (size_t i = 0; i < phases_; ++i) add(marks_[i].name, marks_[i].at_ns);
    add("rest", now_ns);
    last_slow_turn_ = std::move(phases);
    if (last_slow_logged_ns_ < 0 || now_ns - last_slow_logged_ns_ >= kWindowNs) {
      last_slow_logged_ns_ = now_ns;
      spdlog::warn("loop turn slow turn_ms={} phases=\"{}\"", turn_ns / 1'000'000, last_slow_turn_);
    }
  }
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
