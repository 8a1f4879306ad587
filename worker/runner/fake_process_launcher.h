// FakeProcessLauncher: a scripted ProcessLauncher for tests. No processes
// are created; pids count up from 1000. A test makes a "process" exit with
// Exit(pid, code); SIGKILL always ends a fake process, other signals end it
// unless the test called IgnoreSignal(sig) (to model a task that traps
// SIGTERM). FailNextLaunch makes the next Launch return an error. Each
// LaunchRequest is kept whole (env, NUMA pinning included) for tests to
// inspect; nothing is applied.
//
// Thread-safety: one thread, like the real one.
#pragma once

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "worker/runner/process_launcher.h"

namespace gpool::worker {

class FakeProcessLauncher final : public ProcessLauncher {
 public:
  struct Launched {
    int64_t pid = 0;
    LaunchRequest request;
  };

  Result<int64_t> Launch(const LaunchRequest& request) override;
  Status Signal(int64_t pid, int signal) override;
  std::vector<ExitInfo> Reap() override;

  // Test controls.
  void Exit(int64_t pid, int32_t exit_code);
  void IgnoreSignal(int signal) { ignored_.insert(signal); }
  void FailNextLaunch(Status status) { fail_next_ = std::move(status); }

  bool IsRunning(int64_t pid) const { return running_.count(pid) > 0; }
  const std::vector<Launched>& launched() const { return launched_; }
  const std::vector<std::pair<int64_t, int>>& signals() const { return signals_; }

 private:
  int64_t next_pid_ = 1000;
  std::set<int64_t> running_;
  std::set<int> ignored_;
  Status fail_next_;
  std::vector<Launched> launched_;
  std::vector<std::pair<int64_t, int>> signals_;
  std::vector<ExitInfo> pending_exits_;
};

}  // namespace gpool::worker
