// Quantities written by people in node spec files: CPU cores and memory
// sizes. They are parsed exactly (decimal digits, no floating point) into the
// integer units the protocol uses (milli-CPU, MiB).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "protocol/base/status.h"

namespace gpool::topology {

// "8" -> 8000, "7.5" -> 7500, "0.25" -> 250. At most three decimals;
// returns InvalidArgument naming the problem (the caller adds the field).
Result<uint64_t> ParseCpuMilli(std::string_view text);

// Memory sizes in MiB: a plain integer is MiB ("4096"); otherwise a number
// with a binary suffix Ki, Mi, Gi, Ti or Pi ("512Gi", "64Mi", "1.5Ti").
// Sizes that are not a whole number of MiB are rounded down.
Result<uint64_t> ParseMemoryMib(std::string_view text);

}  // namespace gpool::topology
