// Text helpers every module needs: ASCII only and locale-free, so parsing a
// config or spec file never depends on the process's locale.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpool {

constexpr bool IsAsciiSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Without leading and trailing whitespace.
constexpr std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && IsAsciiSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsAsciiSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Whether `s` holds a NUL byte (which no C string, argv entry or environment
// variable can carry).
inline bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// The words separated by single spaces, as a command line is shown in logs.
inline std::string JoinWords(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) {
    if (!out.empty()) out += ' ';
    out += word;
  }
  return out;
}

// A-Z as a-z; every other byte as it is.
inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace gpool
