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
// file (O_APPEND|O_CREAT, 0600), its working directory, NUMA pinning
// (numa_apply.h), its identity (LaunchRequest::identity: groups, gid, uid,
// PR_SET_NO_NEW_PRIVS, after everything that needs root), every other fd
// closed. A failure before or at exec is written to the parent through a
// close-on-exec pipe, so ForkTask can tell "exec'd" (pipe closed, no data)
// from "could not start" (errno arrives); the child then exits 127,
// ForkTask reaps it and, for an exec failure, appends a line saying why to
// the task's log. A pinning call that fails is not fatal: the child reports
// it and execs anyway (posix_process_launcher.h says why).
//
// A request with a hosts_file (a gang task's <job>.hosts, only asked for
// when the worker runs as root) runs in a private mount namespace with that
// file bind-mounted over /etc/hosts, the way container runtimes give each
// container its own: its stable task names resolve, and nothing outside the
// task sees a change. When the namespace or the mount fails the child says
// so in the task's log and execs anyway: GPOOL_HOSTS_FILE still names the
// file.
//
// ForkExec (`gpool exec` into a running task, exec_manager.h) shares all of
// this, with stdout and stderr onto pipes instead of a log, and the running
// task's context taken from its first process: its mount and PID
// namespaces (setns; in a PID namespace the command runs in a child that
// the forked process relays, with the same exit), its identity,
// its working directory (fchdir), its CPU affinity; the caller passes
// descriptors it opened from /proc/<pid>.
//
// Only async-signal-safe calls run between fork and exec: the calling
// process may have other threads (the worker has ZeroMQ's).
//
// Thread-safety: reentrant; PR_SET_PDEATHSIG fires when the *thread* that
// forked exits, so call it from a thread that lives as long as the caller.
#pragma once

#include <sched.h>
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

// What ForkExec adds to a launch; -1 / empty: not used.
struct ExecContext {
  int stdout_fd = -1;  // the child's stdout (the write end of a pipe)
  int stderr_fd = -1;
  int cwd_fd = -1;     // fchdir here (the task's /proc/<pid>/cwd)
  int mnt_ns_fd = -1;  // setns into this mount namespace first (the task's)
  // setns into this PID namespace (the task's own): the command then runs
  // in a child of the forked process, which relays its end (task_exec.cc).
  int pid_ns_fd = -1;
  TaskIdentity identity;  // set: run as the task's uid/gid
  bool has_affinity = false;
  cpu_set_t affinity{};  // sched_setaffinity to this (the task's)
};

struct ForkedTask {
  pid_t pid = 0;
  std::vector<PinningFailure> pinning_failures;
  // With its own PID namespace: the read end on which the task's init
  // writes the task's wait status (ReadTaskWaitStatus); -1 otherwise.
  int status_fd = -1;
};

// InvalidArgument when argv or env cannot be exec'd as given (empty
// command, NUL bytes, an env entry without '=').
Status ValidateLaunch(const LaunchRequest& request);

// Forks and execs request.argv as above, joining `cgroup_fds` first. On
// failure the child has been reaped and the Status says why: IoError (log
// file), Unavailable (cgroup join), NotFound / FailedPrecondition / Internal
// (exec: no such command, permission, other).
//
// With own_pid_namespace (issue 31), the calling process first unshares
// CLONE_NEWPID, so the child is pid 1 of a namespace of its own: it makes
// a private mount namespace with /proc remounted, drops to the task's
// identity, forks the program and stays as its init, reaping what is
// re-parented to it. Its pid is the one returned (signals to its process
// group reach the program); when the program ends it writes its wait status
// to `status_fd` and exits, which kills the rest of the namespace. The
// caller must fork nothing else afterwards (gpool-task-supervisor forks
// exactly one task): its later children would land in that namespace.
Result<ForkedTask> ForkTask(const LaunchRequest& request, const PreparedPinning& pinning,
                            const std::vector<int>& cgroup_fds, bool own_pid_namespace = false);

// After waitpid on a task started with own_pid_namespace: the program's
// wait status as its init reported it, or `fallback` (the init's own, e.g.
// killed by SIGKILL before it could write). Closes status_fd.
int ReadTaskWaitStatus(int status_fd, int fallback);

// Forks and execs request.argv (its log_path unused) in `context`, joining
// `cgroup_fds` first; the same errors as ForkTask.
Result<ForkedTask> ForkExec(const LaunchRequest& request, const ExecContext& context,
                            const std::vector<int>& cgroup_fds);

// What a failed pinning call means, for the worker's log ("CPU affinity 0-3")
// and the line ForkTask's callers append to the task's log.
std::string PinningFailureWhat(const PreparedPinning& pinning, const PinningFailure& failure);
std::string PinningFailureLogLine(const PreparedPinning& pinning, const PinningFailure& failure);

// Appends `line` to the file at `path` (created 0600), best effort.
void AppendLine(const std::string& path, const std::string& line);

}  // namespace gpool::worker
