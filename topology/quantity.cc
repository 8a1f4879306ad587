#include "topology/quantity.h"

#include <cctype>
#include <string>

#include "protocol/base/text.h"

namespace gpool::topology {
namespace {

using u128 = unsigned __int128;

// Past these a number is a typo, not a machine: a billion cores, an EiB.
constexpr uint64_t kMaxCpuMilli = uint64_t{1} << 40;
constexpr uint64_t kMaxMemoryMib = uint64_t{1} << 40;

// The text as errors quote it, cut short so a pasted blob stays readable.
std::string Quoted(std::string_view text) {
  constexpr size_t kMax = 40;
  return "'" + std::string(text.substr(0, kMax)) + (text.size() > kMax ? "...'" : "'");
}

// A non-negative decimal number "12", "0.5", ".5", "3." as numerator / 10^scale.
struct Decimal {
  u128 numerator = 0;
  uint32_t scale = 0;  // digits after the point
};

// The number at the start of `s`; returns the characters it took, 0 when
// there is none.
size_t ParseDecimalPrefix(std::string_view s, Decimal* out) {
  size_t i = 0;
  size_t digits = 0;
  bool point = false;
  *out = Decimal{};
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.' && !point) {
      point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    // 24 digits times a 2^50 unit still fit in 128 bits.
    if (++digits > 24) return 0;
    out->numerator = out->numerator * 10 + static_cast<unsigned>(c - '0');
    if (point) ++out->scale;
  }
  return digits == 0 ? 0 : i;
}

u128 Pow10(uint32_t n) {
  u128 v = 1;
  while (n-- > 0) v *= 10;
  return v;
}

}  // namespace

Result<uint64_t> ParseCpuMilli(std::string_view text) {
  const Status bad =
      Status::InvalidArgument(Quoted(text) + " is not a CPU count (use cores such as 2 or 0.5, or milli-cores such as 500m)");
  const std::string_view s = TrimSpace(text);
  Decimal number;
  const size_t used = ParseDecimalPrefix(s, &number);
  if (used == 0) return bad;
  const std::string_view unit = TrimSpace(s.substr(used));
  u128 milli = 0;
  if (unit.empty()) {
    const u128 scaled = number.numerator * 1000;
    const u128 denominator = Pow10(number.scale);
    if (scaled % denominator != 0) return Status::InvalidArgument(Quoted(text) + " is finer than 1/1000 of a core");
    milli = scaled / denominator;
  } else if (unit == "m") {
    if (number.scale != 0) return Status::InvalidArgument(Quoted(text) + " is not a CPU count (milli-cores are whole)");
    milli = number.numerator;
  } else {
    return bad;
  }
  if (milli > kMaxCpuMilli) return Status::InvalidArgument(Quoted(text) + " is too large");
  return static_cast<uint64_t>(milli);
}

Result<uint64_t> ParseMemoryMib(std::string_view text, Rounding rounding) {
  const Status bad = Status::InvalidArgument(
      Quoted(text) + " is not a memory size (use MiB such as 4096, or a number with Ki, Mi, Gi, Ti, Pi or K, M, G, "
                     "T, P such as 80Gi)");
  const std::string_view s = TrimSpace(text);
  Decimal number;
  const size_t used = ParseDecimalPrefix(s, &number);
  if (used == 0) return bad;
  std::string unit = AsciiLower(TrimSpace(s.substr(used)));
  if (unit.size() > 1 && unit.back() == 'b') unit.pop_back();  // "GiB", "GB"
  struct Unit {
    const char* name;
    u128 bytes;
  };
  static const Unit kUnits[] = {
      {"", u128{1} << 20},   {"ki", u128{1} << 10}, {"mi", u128{1} << 20}, {"gi", u128{1} << 30},
      {"ti", u128{1} << 40}, {"pi", u128{1} << 50}, {"k", Pow10(3)},       {"m", Pow10(6)},
      {"g", Pow10(9)},       {"t", Pow10(12)},      {"p", Pow10(15)},
  };
  const Unit* match = nullptr;
  for (const auto& u : kUnits) {
    if (unit == u.name) match = &u;
  }
  if (match == nullptr) return bad;
  const u128 bytes = number.numerator * match->bytes;
  const u128 denominator = Pow10(number.scale) * (u128{1} << 20);
  const u128 mib = rounding == Rounding::kUp ? (bytes + denominator - 1) / denominator : bytes / denominator;
  if (mib > kMaxMemoryMib) return Status::InvalidArgument(Quoted(text) + " is too large");
  return static_cast<uint64_t>(mib);
}

Result<uint64_t> ParseDurationMs(std::string_view text) {
  const Status error =
      Status::InvalidArgument("'" + std::string(text.substr(0, 64)) + "' is not a duration (like 90, 90s, 5m, 2h or 250ms)");
  uint64_t unit_ms = 1000;
  auto strip = [&](std::string_view suffix, uint64_t ms) {
    if (text.size() <= suffix.size() || text.substr(text.size() - suffix.size()) != suffix) return false;
    text.remove_suffix(suffix.size());
    unit_ms = ms;
    return true;
  };
  strip("ms", 1) || strip("s", 1000) || strip("m", 60'000) || strip("h", 3'600'000);
  if (text.empty() || text.size() > 10) return error;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return error;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (value > 1'000'000'000) return error;
  return value * unit_ms;
}

}  // namespace gpool::topology
