// Quantities people write (node spec files, job spec files, the CLI): CPU
// cores and memory sizes, parsed exactly (decimal digits, no floating point)
// into the integer units the protocol uses (milli-CPU, MiB). One grammar for
// all of them, so a size a node spec takes a job spec takes too.
//
// Errors are InvalidArgument and quote the text ("'80Q' is not a memory
// size (...)"); the caller adds the field. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "protocol/base/status.h"

namespace gpool::topology {

// CPU quantity -> milli-CPUs: "8" -> 8000, "0.5" (or ".5") -> 500,
// "1.25" -> 1250, "250m" -> 250. Finer than 1/1000 of a core is an error.
Result<uint64_t> ParseCpuMilli(std::string_view text);

// How a size that is not a whole number of MiB is rounded: a request up
// (it gets at least what it asked for), a capacity down (it never claims
// more than the machine has).
enum class Rounding { kUp, kDown };

// Memory quantity -> MiB:
//   "4096"  -> 4096   a plain number is MiB
//   "512Mi" -> 512    Ki, Mi, Gi, Ti, Pi: binary (powers of 1024)
//   "1.5Ti" -> 1.5 x 2^20   fractions are exact
//   "1G"    -> 953 or 954   K, M, G, T, P: decimal (SI, as in Kubernetes)
// Units are case-insensitive and may end in "B" ("4GiB", "4GB"); a space
// may separate number and unit.
Result<uint64_t> ParseMemoryMib(std::string_view text, Rounding rounding);

// Duration -> milliseconds: "90" and "90s" -> 90000, "5m", "2h", "250ms".
// Whole numbers only, at most 10^9 of the unit.
Result<uint64_t> ParseDurationMs(std::string_view text);

}  // namespace gpool::topology
