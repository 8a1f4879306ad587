// UsageDriver: the leader's side of usage accounting (control/state/
// usage_ledger.h).
//
// Every UsageOptions::checkpoint_every_ms the serving leader proposes one
// UsageCheckpointCmd: on apply, running tasks' usage counts as vouched for up
// to the command's time, so a task whose end nobody saw (its node went
// silent) is charged up to the last checkpoint, and a crash costs at most one
// interval. The same command carries the leader's retention numbers for the
// raw records and the hourly and daily rollups, so every replica trims the same. Nothing is
// proposed while no task runs and nothing is due for trimming. One proposal
// in flight at a time; Reset (leadership changed) forgets it.
//
// Thread-safety: the coordinator's loop thread owns it.
#pragma once

#include <cstdint>

#include "control/leader_service.h"
#include "control/ports.h"
#include "control/state/cluster_state.h"
#include "protocol/base/clock.h"

namespace gpool::control {

struct UsageOptions {
  // How often running work is checkpointed (--usage-checkpoint-ms); 0: never
  // (a task lost with its node is then charged nothing).
  int64_t checkpoint_every_ms = 60'000;
  // Raw usage records kept (--usage-keep-records): about 70 bytes each in a
  // snapshot (usage_image.cc), so the default is about 35 MB; 0: no limit.
  uint64_t keep_records = 500'000;
  // Raw records are kept this long after they ended (--usage-keep-days).
  int64_t keep_records_ms = int64_t{90} * 24 * 3600 * 1000;
  // Hourly rollups are kept this long (--usage-hourly-days): they are the
  // bulk of the ledger (bench/usage_report_bench.cc: 1.7 million rows for a
  // month of a busy 10,000-GPU cluster), and older reports read whole days.
  int64_t keep_hourly_ms = int64_t{35} * 24 * 3600 * 1000;
  // Daily rollups are kept this long (--usage-daily-days); 0: forever. At
  // most about 250 KB a day for 10,000 GPUs (docs/operations.md's sizing
  // table), so the default, 400 days, keeps a year and its invoices.
  int64_t keep_daily_ms = int64_t{400} * 24 * 3600 * 1000;
};

class UsageDriver : public LeaderService {
 public:
  UsageDriver(const UsageOptions& options, const state::ClusterState& state, Proposer& proposer, const Clock* clock)
      : options_(options), state_(state), proposer_(proposer), clock_(clock) {}

  // Leader only. `now_ms` is monotonic.
  void Tick(int64_t now_ms) override;
  void Reset() override;

 private:
  bool TrimDue(int64_t wall_ms) const;

  UsageOptions options_;
  const state::ClusterState& state_;
  Proposer& proposer_;
  const Clock* clock_;
  int64_t next_ms_ = 0;
  bool in_flight_ = false;
  uint64_t generation_ = 0;  // bumped by Reset: a former leadership's callback changes nothing
};

}  // namespace gpool::control
