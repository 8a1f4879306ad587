// StopHandover: what a leading replica does between SIGTERM and exit.
//
// A leader that simply exits leaves its followers to notice the silence: an
// election timeout (300-600 ms by default) passes before anyone campaigns,
// and nothing commits or schedules meanwhile. A planned stop (an operator,
// systemd, a rolling upgrade) can do better: the leader hands leadership to
// the voter holding the most of its log (Raft's TimeoutNow, thesis 3.10),
// which campaigns at once, and keeps its loop turning until it hears of the
// new leader (so the clients and workers it still answers are redirected to
// it) or a bound passes, whichever is first. A replica that is not the
// leader, or has no other voter, stops at once.
//
// The bound matters: a transfer the Raft core gives up on (the target did
// not catch up within an election timeout) must not keep the process from
// exiting. The cluster then elects a leader the usual way.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>

#include "control/log/commit_log.h"

namespace gpool::control {

class StopHandover {
 public:
  // `bound_ms`: the longest the loop keeps turning after the stop was asked.
  StopHandover(log::CommitLog& log, int64_t bound_ms) : log_(log), bound_ms_(bound_ms) {}

  // Called every loop turn once a stop has been asked. True while the loop
  // should keep turning (a handover is under way); false: exit now.
  bool KeepRunning(int64_t now_ms);

  // The replica asked to take over (0: none was), for logs and tests.
  uint64_t target() const { return target_; }

 private:
  log::CommitLog& log_;
  const int64_t bound_ms_;
  int64_t started_ms_ = -1;
  uint64_t target_ = 0;
  uint64_t term_ = 0;  // the term this replica led in when the stop came
};

}  // namespace gpool::control
