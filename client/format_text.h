// The text cells the CLI's tables are made of: one line, shortened without
// cutting a UTF-8 sequence, joined, and fixed-point numbers. Shared by the
// format_*.cc files; not part of format.h's interface.
//
// Thread-safe (no state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gpool::text {

inline constexpr size_t kMaxTextCell = 60;
// Taints and labels come last in the nodes table; past this, --json shows them all.
inline constexpr size_t kMaxLabelsCell = 40;

// Control characters (newlines, tabs, escapes) become spaces.
std::string OneLine(std::string_view s);
// At most `max` bytes, "..." at the end when cut, never inside a UTF-8 sequence.
std::string Shorten(const std::string& s, size_t max = kMaxTextCell);
// Display width: UTF-8 continuation bytes take no column.
size_t Width(const std::string& s);
std::string JoinStrings(const std::vector<std::string>& items, std::string_view sep);
// {0,2,3} -> "0,2,3".
std::string JoinIndices(const std::vector<uint32_t>& items);
// "used/total".
std::string Ratio(const std::string& used, const std::string& total);
// A fixed-point number `value / scale` with up to `decimals` digits, trailing zeros dropped.
std::string FixedPoint(uint64_t value, uint64_t scale, int decimals);
// "k=v,k=v" sorted by key (a std::map's order).
std::string JoinKeyValues(const std::map<std::string, std::string>& items, std::string_view sep = ",");

}  // namespace gpool::text
