// LoopStallMeter (issue 49): how long the coordinator's loop thread is away
// from its poll. Every turn of Coordinator::Run polls its sockets, then does
// that turn's work (Raft, applying, frames, the scheduler's collection,
// HTTP renders, snapshot bookkeeping); while it works, nothing else is
// answered: heartbeats to followers wait, so a long turn is what costs an
// election. Clients only see it indirectly (ack gaps); this measures it
// where it happens.
//
// Two clock reads per turn: when the poll returns and when the next poll is
// called; the difference is the turn's work. Recorded as a histogram
// (gpool_loop_iteration_seconds) and as the longest turn of the last window
// (gpool_loop_iteration_max_seconds), which a scraper that polls more often
// than the window reads without missing a spike between two scrapes.
//
// A turn of kSlowTurnNs or more is logged (at most once a window) with the
// time each phase the loop marked took (`loop turn slow turn_ms=180
// phases="raft:2 apply:170 clients:1 ..."`): the histogram says a turn was
// long, the phases say where, without a profiler on a production leader.
//
// Times are steady-clock nanoseconds handed in by the caller, so a test can
// drive it without sleeping. Loop thread only, like the other metric sets.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/metrics/exposition.h"

namespace gpool::control {

// Bounds for a loop turn: 100 us to 5 s, with 50 ms (the stall budget of
// issue 49) and the election-timeout range (100-300 ms) as edges, so
// "p99 <= 50 ms" and "a turn as long as an election timeout" read off
// buckets directly.
std::vector<double> LoopIterationBounds();

class LoopStallMeter {
 public:
  // The window a max covers: at least kWindowNs, at most twice that (the
  // current window and the one before it).
  static constexpr int64_t kWindowNs = int64_t{10} * 1'000'000'000;

  static constexpr int64_t kSlowTurnNs = int64_t{100} * 1'000'000;

  void PollReturned(int64_t now_ns) {
    returned_ns_ = now_ns;
    phases_ = 0;
  }
  // The turn's work up to now, since the last mark (or the poll's return),
  // was `name` (a string literal). Past kMaxPhases marks in a turn are dropped.
  void Phase(const char* name, int64_t now_ns) {
    if (returned_ns_ >= 0 && phases_ < kMaxPhases) marks_[phases_++] = Mark{name, now_ns};
  }
  // Ends the turn that began at the last PollReturned; a call with no turn
  // begun (the first poll) records nothing.
  void PollCalled(int64_t now_ns);

  const metrics::Histogram& iterations() const { return iterations_; }
  // The longest turn in the last one or two windows (seconds), as of the
  // last turn recorded.
  double window_max_seconds() const;
  // The phases of the last slow turn ("raft:2 apply:170 rest:1", ms), empty
  // if none was slow yet.
  const std::string& last_slow_turn() const { return last_slow_turn_; }

 private:
  metrics::Histogram iterations_{LoopIterationBounds()};
  int64_t returned_ns_ = -1;
  int64_t window_start_ns_ = -1;
  int64_t current_max_ns_ = 0;
  int64_t previous_max_ns_ = 0;
  struct Mark {
    const char* name = "";
    int64_t at_ns = 0;
  };
  static constexpr size_t kMaxPhases = 24;
  std::array<Mark, kMaxPhases> marks_{};
  size_t phases_ = 0;
  std::string last_slow_turn_;
  int64_t last_slow_logged_ns_ = -1;
};

}  // namespace gpool::control
