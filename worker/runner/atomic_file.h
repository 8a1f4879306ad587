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
// leave either. For what only matters within one boot (the node lease,
// rewritten on every heartbeat: an fsync there stalls the agent's loop
// whenever the disk is busy).
Status WriteFileAtomic(const std::string& path, const std::string& content, bool sync = true);

// The whole file. NotFound when it does not exist, IoError otherwise.
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace gpool::worker
