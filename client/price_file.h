// The price table as a YAML file (`gpool prices set FILE`, `gpool invoice
// --prices FILE`), read into the wire's PriceTable (protocol/messages_usage.h)
// without ever going through a floating-point number: "2.50" is exactly
// 2,500,000 micro-units, "1.3" exactly 1300 permille.
//
//   currency: EUR
//   gpu_hour:            # a whole GPU for an hour, per device model
//     A100: 2.50
//     H100: 4.00
//     default: 1.00      # any other model
//   share_gpu_hour:      # optional: an hour of shares' compute (default: gpu_hour)
//     A100: 2.00
//   pool_multiplier:     # optional, per pool (default 1)
//     exclusive: 1.3
//   class_multiplier:    # optional, per priority class (default 1)
//     high: 1.5
//     low: 0.5
//   cpu_core_hour: 0.01  # optional
//   memory_gib_hour: 0.002
//   min_period_minutes:  # optional (issue 50): an attempt is billed at least this long
//     class: {high: 10}  # by priority class
//     queue: {web: 5}    # by the job's queue (wins over its class)
//   off_peak:            # optional: usage in [from_hour, to_hour) UTC costs `multiplier`
//     from_hour: 22
//     to_hour: 6
//     multiplier: 0.6
//   volume_discount:     # optional: a queue's GPU-hours in a month beyond gpu_hours
//     - gpu_hours: 1000
//       multiplier: 0.9
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/base/status.h"
#include "protocol/messages_usage.h"
#include "protocol/model/prices.h"

namespace gpool::cli {

// An unsigned decimal with at most `digits` places, scaled by 10^digits
// ("2.5", 6 -> 2,500,000). InvalidArgument names `field`.
Result<int64_t> ParseScaledDecimal(std::string_view field, std::string_view text, int digits);
// The reverse: 2,500,000 at 6 digits -> "2.50" (at least two places, no trailing zeros past them).
std::string FormatScaledDecimal(int64_t value, int digits);

// A price table from YAML text; every error names the field. The result is
// also checked with ValidatePriceTable.
Result<PriceTable> ParsePriceYaml(std::string_view yaml);
Result<PriceTable> ReadPriceFile(const std::string& path);
// The table as the YAML ParsePriceYaml reads (for `gpool prices show`).
std::string FormatPriceYaml(const PriceTable& table);

}  // namespace gpool::cli
