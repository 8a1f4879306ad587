// Times as `gpool usage` and `gpool invoice` read and print them, in UTC and
// without the C library's time zone state: "2026-10-01", "2026-10-01T12:00:00Z"
// (RFC 3339, with Z or a +hh:mm / -hh:mm offset, optional fraction), a month
// "2026-10", or milliseconds since the epoch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/base/status.h"

namespace gpool::cli {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day);

// A date, an RFC 3339 time or a number of ms; InvalidArgument names `flag`.
Result<int64_t> ParseUsageTime(std::string_view flag, std::string_view text);
// "YYYY-MM" -> [first ms of the month, first ms of the next).
Result<std::pair<int64_t, int64_t>> ParseMonth(std::string_view text);
// "2026-10-01T12:00:00Z" (seconds); "2026-10-01" with `date_only`.
std::string FormatUtc(int64_t ms, bool date_only = false);

}  // namespace gpool::cli
