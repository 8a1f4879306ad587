// Small files that other processes read while they change: written whole to
// a temporary name beside the target, synced, then renamed over it, so a
// reader sees the old content or the new, never a part (rename(2) is atomic
// within a file system). The worker's task records, the supervisors' exit
// records and the node lease are written this way.
//
// Thread-safety: reentrant; two writers of one path race only on which
// content wins.
#pragma once

#include <string>

#include "protocol/base/status.h"

namespace gpool::worker {

// Writes `content` to `path` atomically (mode 0644). IoError saying why.
// With `sync` false the data is not fsynced before the rename: readers on
// this machine still see the old content or the new, but a power loss may
// leave either (or an empty file). For what only matters within one boot:
// the node lease, rewritten on every heartbeat (an fsync there stalls the
// agent's loop whenever the disk is busy), and a task's records that only a
// restarted worker reads (its bind, launch spec, start record, stop and
// acknowledgement): a reboot ends every task, and a record lost with it
// reads as a task lost with its node, which it was. Each fsync of those cost
// a start a flush through the virtual disk (issue 46). The exit record,
// which carries a result, stays synced.
Status WriteFileAtomic(const std::string& path, const std::string& content, bool sync = true);
// Spelled out at the call sites above.
inline constexpr bool kWithinBoot = false;

// The whole file. NotFound when it does not exist, IoError otherwise.
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace gpool::worker
