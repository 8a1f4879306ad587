// The arithmetic of billing (issue 50): what a piece of a task attempt's
// usage is charged under the committed price table and its BillingRules
// (protocol/model/billing.h). Pure functions of their arguments, so every
// replica charges the same from the same log; integers only (money in
// micro-units, each figure rounded once, half up).
//
// A piece [start, end) of an attempt is priced as the invoice prices usage
// (client/invoice.h): GPU, CPU and memory at list price times the pool and
// class multipliers. Then, in this order:
//   off-peak  the part of the piece inside the daily window is multiplied by
//             its permille: discount = list x off_ms / piece_ms x (1 - p)
//   volume    the GPU part, after off-peak, of the GPU-mms that lie beyond a
//             tier's threshold of the queue's month so far is multiplied by
//             that tier's permille
//   top-up    (the attempt's last piece only) an attempt shorter than its
//             minimum period is charged the missing time at list price
// charged = list - off_peak_discount - volume_discount + min_topup.
#pragma once

#include <cstdint>
#include <string>

#include "control/state/usage_ledger.h"
#include "protocol/model/billing.h"
#include "protocol/model/prices.h"

namespace gpool::state {

// The first millisecond of the UTC calendar month holding `ms`, and of the next.
int64_t MonthStartMs(int64_t ms);
int64_t NextMonthStartMs(int64_t ms);

// How much of [start, end) lies in the daily window (0 without one).
int64_t OffPeakOverlapMs(const OffPeakWindow& window, int64_t start, int64_t end);

// The minimum billing period of a job of `queue` and `priority_class`: the
// queue's when it has one, else the class's, else 0.
int64_t MinPeriodMs(const BillingRules& rules, const std::string& queue, const std::string& priority_class);

// Sum over the GPU-mms (before, before + piece] of each one's tier permille
// (1000 below the first tier): the piece's volume multiplier is this
// divided by piece x 1000.
uint64_t VolumePermilleMms(const std::vector<VolumeTier>& tiers, uint64_t before_mms, uint64_t piece_mms);

struct Bill {
  uint64_t gpu_mms = 0;
  int64_t list_micro = 0;
  int64_t off_peak_discount_micro = 0;
  int64_t volume_discount_micro = 0;
  int64_t min_topup_micro = 0;
  int64_t charged_micro() const { return list_micro - off_peak_discount_micro - volume_discount_micro + min_topup_micro; }
};

// The bill of [start, end) of `record` (its shape: GPUs, shares, CPU,
// memory, model, pool, class), its queue's month having used
// `volume_before_mms` GPU-mms before it, plus `topup_ms` at list price.
Bill BillPiece(const UsageRecord& record, int64_t start, int64_t end, int64_t topup_ms, uint64_t volume_before_mms,
               const PriceTable& prices);

}  // namespace gpool::state
