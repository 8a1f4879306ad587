// The files gpool's CUDA interposer (worker/cuda/) shares between a node's
// tasks, made and kept by the worker so that no task can make them first.
//
// Tasks of different users are hostile to each other, and both places live
// in shared memory (/dev/shm), where anyone may create a file:
//   - the ledger directory (--cuda-ledger-dir, default /dev/shm/gpool-cuda)
//     is the worker's, 0711: a task can open its own ledger by name but
//     create nothing there. Each attempt's ledger is made by the worker
//     before the task starts, owned by the task's uid, 0600 -- the
//     interposer trusts only a ledger of its own uid without group or other
//     bits (ledger_file.h), so a ledger another task planted would refuse
//     every allocation; here none can be planted.
//   - the activity directory (--cuda-activity-dir, default
//     /dev/shm/gpool-cuda-activity.d) is the worker's, 01777 like /tmp:
//     every interposed process publishes its own file there, and the sticky
//     bit keeps others from removing it. A directory some task made first is
//     owned by that task's user, whom the other users' interposers rightly
//     do not trust (its owner may delete their files); the worker moves such
//     a directory aside at start and makes its own.
//   - a killed process leaves its activity file behind. The worker sweeps
//     files nobody wrote for a long while; a live process that was only
//     paused publishes again at its next launch (device_activity.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "protocol/base/status.h"

namespace gpool::worker {

// Makes `path` a directory of this process's user with exactly `mode`. A
// directory of another user, a symlink or a file there is renamed aside
// (<path>.untrusted.<pid>.<n>, logged) first. IoError when it cannot;
// InvalidArgument for a directory others may write (/dev/shm itself) when
// `mode` would narrow it.
Status EnsureWorkerDir(const std::string& path, mode_t mode);

// Makes the attempt's ledger: whatever is at `path` is removed, and a new
// empty file is created (O_EXCL, no symlink followed), 0600, owned by
// `uid`:`gid` when this process may give it away (root), else by itself.
Status CreateTaskLedger(const std::string& path, uid_t uid, gid_t gid);

// Removes from `dir`, among the entries named as the interposer names its
// files, every regular file not written for `max_idle_ms` as of `now_ms`
// (wall clock) and anything that is not a regular file (a symlink, a FIFO:
// the interposer never makes one). Other names are never touched. Returns
// how many went.
size_t SweepActivityDir(const std::string& dir, int64_t now_ms, int64_t max_idle_ms);

}  // namespace gpool::worker
