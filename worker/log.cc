#include "worker/log.h"

namespace gpool::worker {

std::string Q(std::string_view value, size_t max_length) {
  bool clipped = false;
  if (value.size() > max_length) {
    value = value.substr(0, max_length);
    clipped = true;
  }
  bool needs_quotes = value.empty() || clipped;
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || u < 0x20 || u == 0x7f) needs_quotes = true;
  }
  if (!needs_quotes) return std::string(value);
  std::string out = "\"";
  static constexpr char kHex[] = "0123456789abcdef";
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  if (clipped) out += "...";
  out += '"';
  return out;
}

}  // namespace gpool::worker
