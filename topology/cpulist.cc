#include "topology/cpulist.h"

#include <algorithm>
#include <charconv>

namespace gpool::topology {
namespace {

bool ParseId(std::string_view text, uint32_t* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && *out <= kMaxCpuId;
}

}  // namespace

std::optional<std::vector<uint32_t>> ParseCpuList(std::string_view list) {
  while (!list.empty() && (list.back() == '\n' || list.back() == ' ')) list.remove_suffix(1);
  std::vector<uint32_t> ids;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view range = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (comma != std::string_view::npos && list.empty()) return std::nullopt;  // "0-3,"
    const size_t dash = range.find('-');
    uint32_t first = 0;
    uint32_t last = 0;
    if (!ParseId(range.substr(0, dash), &first)) return std::nullopt;
    last = first;
    if (dash != std::string_view::npos && (!ParseId(range.substr(dash + 1), &last) || last < first)) {
      return std::nullopt;
    }
    for (uint32_t id = first; id <= last; ++id) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string FormatCpuList(std::vector<uint32_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace gpool::topology
