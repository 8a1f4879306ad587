// SimulatedProcessLauncher: the ProcessLauncher of fleet mode (--simulate),
// where a thousand nodes share one process and no task may fork: a task is
// a timer, not a program.
//
// What a simulated task does is read from its command the way a shell user
// would expect, so the jobs that drive real nodes drive simulated ones too:
//   - `sleep S` runs S seconds (fractions allowed) and exits 0;
//     `sleep infinity` runs until it is signalled;
//   - `false` exits 1 and `exit N` exits N at once;
//   - anything else (`true`, `echo hi`, a training script) exits 0 at once;
//   - `sh -c SCRIPT` and `bash -c SCRIPT` are read by SCRIPT's first command.
// Any signal but 0 ends a running task at once (exit_code 128+signal), as a
// process with default dispositions would; SIGTERM grace periods therefore
// never run out. Exits are seen by Reap once the clock has passed them.
//
// Launch appends one line to the task's log saying that the task was
// simulated, so FetchLog and `gpool logs` find the log as on a real node.
// Pids count up from 10000 and mean nothing outside this launcher.
//
// Thread-safety: one thread, like the real one. The clock is not owned and
// must outlive the launcher.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/clock.h"
#include "worker/runner/process_launcher.h"

namespace gpool::worker {

// How a simulated command behaves: exits with `exit_code` after `run_ms`,
// or runs until signalled when run_ms is empty.
struct SimulatedRun {
  std::optional<int64_t> run_ms = 0;
  int32_t exit_code = 0;
  bool operator==(const SimulatedRun&) const = default;
};

// The behaviour of `argv` under the rules above.
SimulatedRun SimulateCommand(const std::vector<std::string>& argv);

class SimulatedProcessLauncher final : public ProcessLauncher {
 public:
  explicit SimulatedProcessLauncher(const Clock* clock) : clock_(clock) {}

  Result<int64_t> Launch(const LaunchRequest& request) override;
  Status Signal(int64_t pid, int signal) override;
  std::vector<ExitInfo> Reap() override;
  // Its exits are known: the first timed one, or now once one was signalled.
  int64_t NextExitMs(int64_t now_ms) const override;
  bool TasksWriteLogs() const override { return false; }

  size_t running() const { return running_.size(); }

 private:
  struct Running {
    std::optional<int64_t> exit_at_ms;  // empty: until signalled
    int32_t exit_code = 0;
  };

  const Clock* clock_;
  int64_t next_pid_ = 10'000;
  std::map<int64_t, Running> running_;           // by pid
  std::multimap<int64_t, int64_t> exits_by_time_;  // exit_at_ms -> pid, for the timed ones
  std::vector<ExitInfo> signalled_;              // ended by Signal, not yet reaped
};

}  // namespace gpool::worker
