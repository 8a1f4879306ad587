#include "worker/runner/proc_stat.h"

#include <charconv>
#include <fstream>
#include <sstream>

namespace gpool::worker {
namespace {

// Skips spaces, then reads one decimal integer (possibly negative).
bool NextInt(std::string_view& text, int64_t* out) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  if (ec != std::errc()) return false;
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  return true;
}

}  // namespace

std::optional<ProcStat> ParseProcStat(std::string_view text) {
  ProcStat stat;
  std::string_view head = text;
  if (!NextInt(head, &stat.pid)) return std::nullopt;
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(close + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.empty()) return std::nullopt;
  rest.remove_prefix(1);  // the state letter
  if (!NextInt(rest, &stat.ppid) || !NextInt(rest, &stat.pgrp)) return std::nullopt;
  return stat;
}

std::optional<ProcStat> ReadProcStat(const std::string& proc_root, int64_t pid) {
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/stat");
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return ParseProcStat(text.str());
}

}  // namespace gpool::worker
