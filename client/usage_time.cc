#include "client/usage_time.h"

#include <cstdio>

namespace gpool::cli {
namespace {

constexpr int64_t kDayMs = 86'400'000;

// Reads exactly `n` digits at `pos`; -1 if they are not there.
int64_t Digits(std::string_view text, size_t pos, size_t n) {
  if (pos + n > text.size()) return -1;
  int64_t value = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

unsigned DaysInMonth(int64_t year, unsigned month) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

Status BadTime(std::string_view flag, std::string_view text) {
  return Status::InvalidArgument(std::string(flag) + ": expected a date (2026-10-01), an RFC 3339 time " +
                                 "(2026-10-01T12:00:00Z) or milliseconds since 1970, got '" +
                                 std::string(text.substr(0, 40)) + "'");
}

void CivilFromDays(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

}  // namespace

int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day) {
  year -= month <= 2;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const auto yoe = static_cast<unsigned>(year - era * 400);
  const unsigned doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

Result<int64_t> ParseUsageTime(std::string_view flag, std::string_view text) {
  if (!text.empty() && text.size() <= 15 && text.find_first_not_of("0123456789") == std::string_view::npos) {
    return Digits(text, 0, text.size());
  }
  const int64_t year = Digits(text, 0, 4), month = Digits(text, 5, 2), day = Digits(text, 8, 2);
  if (year < 1970 || text.size() < 10 || text[4] != '-' || text[7] != '-' || month < 1 || month > 12 || day < 1 ||
      day > DaysInMonth(year, static_cast<unsigned>(month))) {
    return BadTime(flag, text);
  }
  int64_t ms = DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * kDayMs;
  if (text.size() == 10) return ms;
  if (text[10] != 'T' && text[10] != 't' && text[10] != ' ') return BadTime(flag, text);
  const int64_t hour = Digits(text, 11, 2), minute = Digits(text, 14, 2), second = Digits(text, 17, 2);
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 || text.size() < 20 ||
      text[13] != ':' || text[16] != ':') {
    return BadTime(flag, text);
  }
  ms += ((hour * 60 + minute) * 60 + second) * 1000;
  size_t pos = 19;
  if (text[pos] == '.') {  // a fraction: milliseconds kept, the rest dropped
    size_t end = pos + 1;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    if (end == pos + 1) return BadTime(flag, text);
    std::string frac(text.substr(pos + 1, std::min<size_t>(3, end - pos - 1)));
    frac.resize(3, '0');
    ms += Digits(frac, 0, 3);
    pos = end;
  }
  if (pos == text.size() - 1 && (text[pos] == 'Z' || text[pos] == 'z')) return ms;
  if (pos + 6 == text.size() && (text[pos] == '+' || text[pos] == '-') && text[pos + 3] == ':') {
    const int64_t oh = Digits(text, pos + 1, 2), om = Digits(text, pos + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return BadTime(flag, text);
    const int64_t offset = (oh * 60 + om) * 60'000;
    return text[pos] == '+' ? ms - offset : ms + offset;
  }
  return BadTime(flag, text);
}

Result<std::pair<int64_t, int64_t>> ParseMonth(std::string_view text) {
  const int64_t year = Digits(text, 0, 4), month = Digits(text, 5, 2);
  if (text.size() != 7 || text[4] != '-' || year < 1970 || month < 1 || month > 12) {
    return Status::InvalidArgument("--month: expected YYYY-MM (2026-10), got '" + std::string(text.substr(0, 40)) + "'");
  }
  const int64_t from = DaysFromCivil(year, static_cast<unsigned>(month), 1) * kDayMs;
  const int64_t to = month == 12 ? DaysFromCivil(year + 1, 1, 1) * kDayMs
                                 : DaysFromCivil(year, static_cast<unsigned>(month + 1), 1) * kDayMs;
  return std::pair{from, to};
}

std::string FormatUtc(int64_t ms, bool date_only) {
  const int64_t days = ms >= 0 ? ms / kDayMs : (ms - kDayMs + 1) / kDayMs;
  const int64_t in_day = (ms - days * kDayMs) / 1000;
  int64_t y = 0;
  unsigned m = 0, d = 0;
  CivilFromDays(days, y, m, d);
  char text[64];  // room for any int64 year, so -Wformat-truncation has nothing to warn about
  if (date_only) {
    std::snprintf(text, sizeof(text), "%04lld-%02u-%02u", static_cast<long long>(y), m, d);
  } else {
    std::snprintf(text, sizeof(text), "%04lld-%02u-%02uT%02lld:%02lld:%02lldZ", static_cast<long long>(y), m, d,
                  static_cast<long long>(in_day / 3600), static_cast<long long>(in_day / 60 % 60),
                  static_cast<long long>(in_day % 60));
  }
  return text;
}

}  // namespace gpool::cli
