// Reads the tail of a task's log file for FetchLog.
//
// Thread-safety: stateless; call from any thread.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/base/status.h"

namespace gpool::worker {

// The most FetchLog ever returns, whatever max_bytes asks for.
inline constexpr uint64_t kMaxLogTailBytes = 4 * 1024 * 1024;

struct LogTail {
  std::string data;      // the last min(max_bytes, 4 MiB, size) bytes
  uint64_t size = 0;     // the whole file's size
  bool truncated = false;  // data is not the whole file
  uint64_t dropped = 0;    // bytes the log cap moved out of the file (log_cap.h)
};

// NotFound when the file does not exist; IoError on other failures.
Result<LogTail> ReadLogTail(const std::string& path, uint64_t max_bytes);

}  // namespace gpool::worker
