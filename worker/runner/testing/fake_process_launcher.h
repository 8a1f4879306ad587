// FakeProcessLauncher: a scripted ProcessLauncher for tests. No processes
// are created; pids count up from 1000. A test makes a "process" exit with
// Exit(pid, code); SIGKILL always ends a fake process, other signals end it
// unless the test called IgnoreSignal(sig) (to model a task that traps
// SIGTERM). FailNextLaunch makes the next Launch return an error. Each
// LaunchRequest is kept whole (env, NUMA pinning included) for tests to
// inspect; nothing is applied.
//
// Adoption is scripted too: Adoptable(state_dir, result) says what Adopt
// finds there (a running result makes its pid a running fake process);
// Adopt of a directory nothing was scripted for finds a task lost with its
// supervisor, as the real launcher does where no supervisor left a trace.
//
// Thread-safety: one thread, like the real one.
#pragma once

#include <map>
#include <set>
#include <string>
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
  Result<AdoptedProcess> Adopt(const std::string& state_dir) override;

  // Test controls.
  void Exit(int64_t pid, int32_t exit_code);
  // An end with a reason, as a supervisor records it (lease expiry).
  void ExitWithReason(int64_t pid, int32_t exit_code, int32_t signal, std::string reason);
  void Adoptable(const std::string& state_dir, AdoptedProcess result) { adoptable_[state_dir] = std::move(result); }
  const std::vector<std::string>& adopted() const { return adopted_; }
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
  std::map<std::string, AdoptedProcess> adoptable_;
  std::vector<std::string> adopted_;  // state dirs Adopt was asked about, in order
};

}  // namespace gpool::worker
