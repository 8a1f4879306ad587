// The text cells the CLI's tables are made of (format_text.h).
#include "client/format_text.h"

namespace gpool::text {

std::string OneLine(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

std::string Shorten(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t cut = max - 3;
  // Do not cut a UTF-8 sequence in half.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

// Display width: UTF-8 continuation bytes take no column.
size_t Width(const std::string& s) {
  size_t w = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++w;
  }
  return w;
}

std::string JoinStrings(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += sep;
    out += item;
  }
  return out;
}

std::string JoinIndices(const std::vector<uint32_t>& items) {
  std::string out;
  for (uint32_t v : items) {
    if (!out.empty()) out += ",";
    out += std::to_string(v);
  }
  return out;
}

std::string Ratio(const std::string& used, const std::string& total) { return used + "/" + total; }

// A fixed-point number `value / scale` with up to `decimals` digits, trailing zeros dropped.
std::string FixedPoint(uint64_t value, uint64_t scale, int decimals) {
  uint64_t factor = 1;
  for (int i = 0; i < decimals; ++i) factor *= 10;
  // Round to nearest at the last shown decimal.
  unsigned __int128 scaled = (static_cast<unsigned __int128>(value) * factor + scale / 2) / scale;
  uint64_t whole = static_cast<uint64_t>(scaled / factor);
  uint64_t frac = static_cast<uint64_t>(scaled % factor);
  std::string out = std::to_string(whole);
  if (frac != 0) {
    std::string digits = std::to_string(frac);
    digits.insert(0, static_cast<size_t>(decimals) - digits.size(), '0');
    while (!digits.empty() && digits.back() == '0') digits.pop_back();
    out += "." + digits;
  }
  return out;
}

// "k=v,k=v" sorted by key (a std::map's order).
std::string JoinKeyValues(const std::map<std::string, std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& [key, value] : items) {
    if (!out.empty()) out += sep;
    out += key + "=" + value;
  }
  return out;
}

}  // namespace gpool::text
