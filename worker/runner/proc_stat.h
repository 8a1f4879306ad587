// The few fields of /proc/<pid>/stat the worker needs to tell which task a
// process belongs to: its parent and its process group. The root is a
// parameter so tests can point it at a fake tree (as host_probe.h does).
//
// Thread-safety: stateless; call from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpool::worker {

struct ProcStat {
  int64_t pid = 0;
  int64_t ppid = 0;  // 0 for init and kernel threads' parent
  int64_t pgrp = 0;  // process group id
  bool operator==(const ProcStat&) const = default;
};

// Parses the text of a stat file: "pid (comm) state ppid pgrp ...". comm
// may hold spaces and parentheses, so the fields are found after the last
// ')'. nullopt when malformed.
std::optional<ProcStat> ParseProcStat(std::string_view text);

// <proc_root>/<pid>/stat; nullopt when the process is gone or unreadable.
std::optional<ProcStat> ReadProcStat(const std::string& proc_root, int64_t pid);

}  // namespace gpool::worker
