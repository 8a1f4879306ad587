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
Status ValidatePriceTable(const PriceTable& table);

}  // namespace gpool
