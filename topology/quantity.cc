#include "topology/quantity.h"

#include <string>

namespace gpool::topology {
namespace {

// A non-negative decimal "123" or "1.25" as mantissa / 10^scale.
struct Decimal {
  unsigned __int128 mantissa = 0;
  uint32_t scale = 0;
};

constexpr uint32_t kMaxDecimals = 3;
constexpr uint64_t kMaxCpuMilli = 1ull << 40;
constexpr uint64_t kMaxMemoryMib = 1ull << 40;  // 1 EiB

bool ParseDecimal(std::string_view text, Decimal* out) {
  if (text.empty() || text.size() > 24) return false;
  bool seen_dot = false;
  bool seen_digit = false;
  Decimal d;
  for (char c : text) {
    if (c == '.') {
      if (seen_dot) return false;
      seen_dot = true;
      continue;
    }
    if (c < '0' || c > '9') return false;
    seen_digit = true;
    if (seen_dot) {
      if (d.scale == kMaxDecimals) return false;
      ++d.scale;
    }
    d.mantissa = d.mantissa * 10 + static_cast<unsigned>(c - '0');
  }
  if (!seen_digit || text.back() == '.' || text.front() == '.') return false;
  *out = d;
  return true;
}

unsigned __int128 Pow10(uint32_t n) {
  unsigned __int128 v = 1;
  for (uint32_t i = 0; i < n; ++i) v *= 10;
  return v;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<uint64_t> ParseCpuMilli(std::string_view text) {
  Decimal d;
  if (!ParseDecimal(Trim(text), &d)) {
    return Status::InvalidArgument("is not a CPU count (use a number of cores such as 64 or 7.5)");
  }
  unsigned __int128 milli = d.mantissa * 1000 / Pow10(d.scale);
  if (milli > kMaxCpuMilli) return Status::InvalidArgument("is too large");
  return static_cast<uint64_t>(milli);
}

Result<uint64_t> ParseMemoryMib(std::string_view text) {
  const Status bad = Status::InvalidArgument(
      "is not a memory size (use an integer number of MiB, or a number with Ki, Mi, Gi, Ti or Pi such as 80Gi)");
  std::string_view t = Trim(text);
  // Unit in KiB so "Ki" stays exact.
  unsigned __int128 unit_kib = 1024;  // plain number: MiB
  bool plain = true;
  if (t.size() >= 2 && t.back() == 'i') {
    switch (t[t.size() - 2]) {
      case 'K': unit_kib = 1; break;
      case 'M': unit_kib = 1024; break;
      case 'G': unit_kib = 1024ull * 1024; break;
      case 'T': unit_kib = 1024ull * 1024 * 1024; break;
      case 'P': unit_kib = 1024ull * 1024 * 1024 * 1024; break;
      default: return bad;
    }
    t.remove_suffix(2);
    t = Trim(t);
    plain = false;
  }
  Decimal d;
  if (!ParseDecimal(t, &d)) return bad;
  if (plain && d.scale != 0) return bad;
  unsigned __int128 mib = d.mantissa * unit_kib / Pow10(d.scale) / 1024;
  if (mib > kMaxMemoryMib) return Status::InvalidArgument("is too large");
  return static_cast<uint64_t>(mib);
}

}  // namespace gpool::topology
