// gpool-task-supervisor: the small process that holds one task, so that the
// task outlives its worker (the way slurmstepd or conmon hold theirs). The
// worker's PosixProcessLauncher starts one per task, detached from itself;
// it is not in the task's cgroup, so "the task's cgroup is empty" still
// means "nothing of the task runs".
//
//   gpool-task-supervisor --state-dir DIR [--status-fd N] [--lease FILE]
//
// DIR is the task's state directory (supervisor_state.h): the supervisor
// reads what to start from DIR/launch and keeps DIR/lock locked for as long
// as it lives. It then
//   1. makes the task's cgroup (replacing one of that name a dead task left)
//      and starts the task exactly as the launcher would itself
//      (task_exec.h: environment, log with O_APPEND, NUMA pinning, cgroup
//      join before exec, its own process group, death with the supervisor;
//      with own_pid_namespace, its own PID and mount namespaces, the task's
//      first process being its init, and the task's identity);
//   2. records the pid (DIR/started), then answers on fd N (a SupervisorHello:
//      ok and the pid, or why it could not start) and closes it;
//   3. waits for the task's first process; every lease_check_ms it also
//      reads the node lease (--lease, lease_file.h) and, once the lease no
//      longer allows running (past its deadline, or the file absent or
//      unreadable: it fails safe), freezes and kills the whole cgroup;
//   4. when the first process has ended, kills what is left in its process
//      group and cgroup and waits until the cgroup is empty (today's rule: a
//      task ends with its first process), removes the cgroup;
//   5. writes DIR/exit (exit code, signal, end time, reason "exited" or
//      "node lease expired") atomically, and exits 0.
// Its own messages go to stderr (the launcher points it at DIR/supervisor.log).
//
// Thread-safety: a program, single-threaded.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/base/status.h"

namespace gpool::worker {

struct SupervisorOptions {
  std::string state_dir;      // required
  int status_fd = -1;         // where the SupervisorHello goes; -1: nowhere
  std::string lease_path;     // the node lease to enforce; empty: none
  int64_t lease_check_ms = 200;
  // --detach: fork once before anything else and let the first process
  // exit, so that the supervisor is not a child of whoever started it (the
  // worker, which waits for that first process: PosixProcessLauncher).
  bool detach = false;
};

// InvalidArgument, saying what is wrong, for a bad command line.
Result<SupervisorOptions> ParseSupervisorArgs(int argc, const char* const* argv);

// Supervises the task as above. Returns the process's exit code: 0 once the
// exit record is written, 1 when the task could not be started (the hello
// said why) or its end could not be recorded.
int RunSupervisor(const SupervisorOptions& options);

}  // namespace gpool::worker
