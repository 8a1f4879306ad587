// Starting a task's first process: fork, set it up, exec. The one place
// that does it, shared by PosixProcessLauncher (which starts tasks itself
// when it has no supervisor) and gpool-task-supervisor (which starts the
// task it supervises); the launcher contract in process_launcher.h says
// what a started task looks like.
//
// In the child, before exec: into the task's cgroup (through descriptors
// opened before fork, so nothing it starts escapes), its own process group
// (setpgid(0,0)), death with its parent (PR_SET_PDEATHSIG SIGKILL, and exit
// at once if the parent is already gone), default signal dispositions and
// an empty signal mask, stdin from /dev/null, stdout+stderr onto the log
// file (O_APPEND|O_CREAT, 0644), NUMA pinning (numa_apply.h), every other
// fd closed. A failure before or at exec is written to the parent through a
// close-on-exec pipe, so ForkTask can tell "exec'd" (pipe closed, no data)
// from "could not start" (errno arrives); the child then exits 127,
// ForkTask reaps it and, for an exec failure, appends a line saying why to
// the task's log. A pinning call that fails is not fatal: the child reports
// it and execs anyway (posix_process_launcher.h says why).
//
// Only async-signal-safe calls run between fork and exec: the calling
// process may have other threads (the worker has ZeroMQ's).
//
// Thread-safety: reentrant; PR_SET_PDEATHSIG fires when the *thread* that
// forked exits, so call it from a thread that lives as long as the caller.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "worker/runner/numa_apply.h"
#include "worker/runner/process_launcher.h"

namespace gpool::worker {

// A pinning call that failed in the child; the task runs without it.
struct PinningFailure {
  bool cpus = false;  // true: sched_setaffinity; false: set_mempolicy
  int err = 0;
};

struct ForkedTask {
  pid_t pid = 0;
  std::vector<PinningFailure> pinning_failures;
};

// InvalidArgument when argv or env cannot be exec'd as given (empty
// command, NUL bytes, an env entry without '=').
Status ValidateLaunch(const LaunchRequest& request);

// Forks and execs request.argv as above, joining `cgroup_fds` first. On
// failure the child has been reaped and the Status says why: IoError (log
// file), Unavailable (cgroup join), NotFound / FailedPrecondition / Internal
// (exec: no such command, permission, other).
Result<ForkedTask> ForkTask(const LaunchRequest& request, const PreparedPinning& pinning,
                            const std::vector<int>& cgroup_fds);

// What a failed pinning call means, for the worker's log ("CPU affinity 0-3")
// and the line ForkTask's callers append to the task's log.
std::string PinningFailureWhat(const PreparedPinning& pinning, const PinningFailure& failure);
std::string PinningFailureLogLine(const PreparedPinning& pinning, const PinningFailure& failure);

// Appends `line` to the file at `path` (created 0644), best effort.
void AppendLine(const std::string& path, const std::string& line);

}  // namespace gpool::worker
