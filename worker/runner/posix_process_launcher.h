// The real ProcessLauncher: fork + execvp.
//
// In the child, before exec: its own process group (setpgid(0,0)), death
// with the worker (PR_SET_PDEATHSIG SIGKILL, and exit at once if the worker
// is already gone), default signal dispositions and an empty signal mask,
// stdout+stderr onto the log file (O_APPEND|O_CREAT, 0644), every other fd
// closed. A failure before or at exec is written to the parent through a
// close-on-exec pipe, so Launch can tell "exec'd" (pipe closed, no data)
// from "could not start" (errno arrives); the child then exits 127, Launch
// reaps it and appends a line saying why to the task's log.
//
// Reap uses waitpid(pid, WNOHANG) on the pids it launched only, so it never
// steals children that other parts of the process started.
//
// Thread-safety: one thread. PR_SET_PDEATHSIG fires when the *thread* that
// forked exits, so call Launch from a thread that lives as long as the
// worker (the agent's).
#pragma once

#include <set>

#include "worker/runner/process_launcher.h"

namespace gpool::worker {

class PosixProcessLauncher final : public ProcessLauncher {
 public:
  PosixProcessLauncher() = default;
  PosixProcessLauncher(const PosixProcessLauncher&) = delete;
  PosixProcessLauncher& operator=(const PosixProcessLauncher&) = delete;

  Result<int64_t> Launch(const LaunchRequest& request) override;
  Status Signal(int64_t pid, int signal) override;
  std::vector<ExitInfo> Reap() override;

 private:
  std::set<int64_t> children_;  // launched and not yet reaped
};

}  // namespace gpool::worker
