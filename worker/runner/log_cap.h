// Task logs are capped on disk: a task that writes without end (1 GiB in two
// seconds) must not fill the node's disk. The worker checks the size of each
// running task's log four times a second, and at the task's exit; over the
// cap, it keeps the last half of the cap in "<log>.1" (replacing the one
// before), empties the live file in place (the task's descriptor is
// O_APPEND, so its next write lands at the new end: logrotate's
// "copytruncate"), writes a line there saying so, and adds the bytes moved
// out to "<log>.dropped". FetchLog reports that count, so `gpool logs` says
// the log was capped. Bytes the task writes between the copy and the
// truncation are lost without being counted (a few milliseconds' worth).
//
// Thread-safety: stateless; call from the runner's thread.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/base/status.h"

namespace gpool::worker {

inline constexpr uint64_t kDefaultTaskLogMaxBytes = 256ull << 20;

// Caps the log at `path` to `max_bytes`; true when it did. NotFound when
// there is no log; a log at or under the cap is left alone. `finished`: the
// task has ended and nothing writes the log any more, so it is rewritten to
// the line saying so followed by its last half-cap of output (what a user
// reading a finished task's log wants most).
Result<bool> CapTaskLog(const std::string& path, uint64_t max_bytes, bool finished = false);

// The bytes moved out of the log at `path` so far (0 when never capped).
uint64_t DroppedLogBytes(const std::string& path);

}  // namespace gpool::worker
