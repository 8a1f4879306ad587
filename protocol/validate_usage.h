// Validation of the usage-accounting requests (messages_usage.h): a report's
// range and dimension, and a price table. The gateway checks before it reads
// or proposes; the CLI checks a price file before it sends it.
#pragma once

#include "protocol/base/status.h"
#include "protocol/messages_usage.h"

namespace gpool {

// from < to, both after the epoch, at most kMaxUsageRangeMs apart; `by` one
// of kUsageDimensions.
Status ValidateGetUsage(const GetUsage& request);
// Non-negative prices below a million currency units an hour, models named
// once, multipliers between 0 and 100x, a short currency code.
// Billing rules (issue 50): minimum periods of 0 .. 31 days for known
// classes, off-peak hours 0-23 with a multiplier of at most 1, at most 16
// volume tiers in ascending order, each at most 1.
Status ValidatePriceTable(const PriceTable& table);
// A credit add names a queue and a non-zero amount of at most a billion
// currency units either way (a negative one takes credit back).
Status ValidateCredit(const Credit& request);

}  // namespace gpool
