#include "control/usage_driver.h"

#include <spdlog/spdlog.h>

#include "control/state/commands.h"

namespace gpool::control {

bool UsageDriver::TrimDue(int64_t wall_ms) const {
  const state::UsageLedger& ledger = state_.usage_ledger();
  const auto& records = ledger.records();
  // Rollups age out of their windows on an idle cluster too.
  const int64_t daily_before = wall_ms - options_.keep_daily_ms;
  if (ledger.oldest_hourly_ms() < wall_ms - options_.keep_hourly_ms ||
      (options_.keep_daily_ms > 0 && ledger.oldest_daily_ms() < daily_before - daily_before % state::kDayMs)) {
    return true;
  }
  if (records.empty()) return false;
  return (options_.keep_records != 0 && records.size() > options_.keep_records) ||
         records.front().end_ms < wall_ms - options_.keep_records_ms;
}

void UsageDriver::Tick(int64_t now_ms) {
  if (options_.checkpoint_every_ms <= 0 || in_flight_ || now_ms < next_ms_) return;
  next_ms_ = now_ms + options_.checkpoint_every_ms;
  const int64_t wall = clock_->WallMs();
  if (state_.active_task_count() == 0 && !TrimDue(wall)) return;
  in_flight_ = true;
  state::UsageCheckpointCmd cmd{.keep_records = options_.keep_records,
                                .records_before_ms = wall - options_.keep_records_ms,
                                .hourly_before_ms = wall - options_.keep_hourly_ms,
                                .daily_before_ms = options_.keep_daily_ms > 0 ? wall - options_.keep_daily_ms : 0};
  proposer_.Propose(cmd, [this, generation = generation_](const state::ApplyResult& result) {
    if (generation != generation_) return;
    in_flight_ = false;
    if (!result.status.ok()) {
      spdlog::warn("usage: checkpoint failed error=\"{}\"", result.status.ToString());
      return;
    }
    spdlog::debug("usage: checkpointed at_ms={} records={}", state_.usage_ledger().checkpoint_ms(),
                  state_.usage_ledger().records().size());
  });
}

void UsageDriver::Reset() {
  ++generation_;
  in_flight_ = false;
  next_ms_ = 0;
}

}  // namespace gpool::control
