// ProcessLauncher: the worker's only way to start, signal and reap task
// processes. PosixProcessLauncher (posix_process_launcher.h) does it for
// real; FakeProcessLauncher (testing/fake_process_launcher.h) lets tests script
// exits without processes, sockets or sleeps.
//
// Contract:
//   - Launch starts argv[0] (looked up in PATH) with exactly `env` as its
//     environment, stdout and stderr appended to `log_path`, in a new process
//     group whose id is the returned pid, pinned as `numa` says (best effort:
//     a pinning that fails is logged and the task runs unpinned). It returns only once the program
//     was exec'd; when it could not be (no such command, log file not
//     writable), it returns a Status whose message says why and no process
//     is left behind.
//   - With a cgroup name (and a launcher given a CgroupTree), the task runs
//     in a cgroup of its own from before exec, with its CPU and memory
//     requests as limits (task_cgroup.h).
//   - Signal sends `sig` to the whole process group of a launched pid, and
//     to every process in its cgroup.
//   - Reap never blocks; it returns each launched or adopted task that has
//     ended since the last call, exactly once, and only once nothing of it
//     runs any more: with a cgroup, once the cgroup is empty (what remains
//     is killed when its first process ends).
//   - With a state_dir (and a launcher that supervises: PosixProcessLauncher
//     given a supervisor), the task outlives the launcher's process: it runs
//     under a gpool-task-supervisor of its own that records its pid and its
//     exit in state_dir (supervisor_state.h). A later launcher, in a
//     restarted worker, takes such a task over with Adopt; from then on
//     Signal and Reap work on it as on one it launched itself, and Reap
//     learns of its end from the supervisor's exit record (or from the
//     supervisor's death, reported with a reason saying the task was lost).
//   - Adopt never blocks for long; it says whether the task still runs
//     (pid), ended while no launcher watched (its ExitInfo, reason
//     included), or was lost with its supervisor (ExitInfo with exit_code
//     255 and a reason saying so; what was left of it has been killed).
//     Launchers that cannot adopt return FailedPrecondition.
//
// Thread-safety: an implementation belongs to one thread (the runner's).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "worker/runner/task_cgroup.h"

namespace gpool::worker {

// CPU and memory locality for a task whose job asked for a numa_policy
// (task_env.h PlanNumaPinning decides it from the node spec). Applied by the
// child itself between fork and exec, so it holds from the first instruction.
struct NumaPinning {
  std::vector<uint32_t> cpus;  // sched_setaffinity to these CPUs; empty: no pinning at all
  std::vector<int32_t> nodes;  // the NUMA nodes the CPUs belong to, for the memory policy
  // single-numa-node: MPOL_BIND (memory only from `nodes`); best-effort:
  // MPOL_PREFERRED (prefer it, fall back elsewhere).
  bool strict = false;

  bool empty() const { return cpus.empty(); }
  bool operator==(const NumaPinning&) const = default;
};

// Who a task runs as (issue 31). When `set`, the child drops to uid/gid
// (supplementary groups cleared, no new privileges) after everything that
// needs root (cgroup join, namespaces, mounts, log) and just before exec.
// Unset: the task runs as the launcher's own user.
struct TaskIdentity {
  bool set = false;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string user;  // for logs
  bool operator==(const TaskIdentity&) const = default;
};

struct LaunchRequest {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::vector<std::string> env;   // "KEY=value", the child's whole environment
  std::string log_path;           // stdout+stderr, opened O_APPEND|O_CREAT
  NumaPinning numa;               // empty: the child inherits the worker's affinity and policy
  std::string cgroup;             // the task's cgroup name (a file name); empty: none
  CgroupLimits limits;            // its CPU and memory requests, as the cgroup's limits
  // A directory of the task's own where a supervising launcher keeps what a
  // restarted worker needs to adopt it (created if missing); empty: the
  // task is not meant to outlive this process.
  std::string state_dir;
  // The job's hosts file to bind-mount over /etc/hosts in a private mount
  // namespace (task_exec.h); empty: the task sees the node's /etc/hosts.
  std::string hosts_file;
  // Issue 31 isolation. The identity the task runs as (above).
  TaskIdentity identity;
  // Its own PID namespace (its first process is a small init, pid 1 there,
  // whose child runs argv) and a private mount namespace with /proc
  // remounted, so it sees neither the worker nor other tasks. Honoured by a
  // supervised launch only: the supervisor forks nothing else after it
  // (task_exec.h); a direct launch ignores it.
  bool own_pid_namespace = false;
  // The task's working directory (its own, 0700 to its identity); empty:
  // the launcher's.
  std::string work_dir;
};

struct ExitInfo {
  int64_t pid = 0;
  int32_t exit_code = 0;  // 128+signal when killed by a signal
  int32_t signal = 0;     // 0 unless killed by a signal
  // Why it ended, when the launcher knows more than the status says:
  // "node lease expired", "lost with its supervisor: ...". Empty otherwise.
  std::string reason;
  // The node, not the task, ended it (lease expired, supervisor gone): the
  // task is reported lost, so its job's restart policy can requeue it.
  bool LostByNode() const {
    return reason.rfind("node lease expired", 0) == 0 || reason.rfind("lost with its supervisor", 0) == 0;
  }
};

// What Adopt found of a task a previous launcher started.
struct AdoptedProcess {
  int64_t pid = 0;       // the task's first process (0 when it never started)
  bool running = false;  // true: Signal and Reap now work on pid
  int64_t start_wall_ms = 0;  // when the task started (wall clock); 0: unknown
  ExitInfo exit;         // when !running: how it ended
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;
  virtual Result<int64_t> Launch(const LaunchRequest& request) = 0;
  // A launch in two halves, so that several are under way at once: a
  // supervised start waits for its supervisor to exec the task (tens of ms
  // of fork and exec), and one after another those waits capped a node at
  // ~30 task starts a second (issue 46). BeginLaunch starts it without
  // waiting and returns a ticket; FinishLaunch(ticket) waits for it and
  // answers as Launch would. Every ticket is finished once, in any order.
  // By default nothing happens until FinishLaunch, which calls Launch.
  virtual uint64_t BeginLaunch(const LaunchRequest& request) {
    deferred_.emplace(next_ticket_, request);
    return next_ticket_++;
  }
  virtual Result<int64_t> FinishLaunch(uint64_t ticket) {
    auto it = deferred_.find(ticket);
    if (it == deferred_.end()) return Status::NotFound("no launch " + std::to_string(ticket) + " under way");
    const LaunchRequest request = std::move(it->second);
    deferred_.erase(it);
    return Launch(request);
  }
  virtual Status Signal(int64_t pid, int signal) = 0;
  virtual std::vector<ExitInfo> Reap() = 0;
  // The earliest monotonic time at which Reap may return an exit: a caller
  // that polls only when something is due (the fleet, fleet.h) need not
  // poll before then unless it signals a task meanwhile. `now_ms` (the
  // default): not known, as a real process exits when it will; poll always.
  virtual int64_t NextExitMs(int64_t now_ms) const { return now_ms; }
  // Whether a task writes its log while it runs, so that its size is worth
  // checking against the cap (a simulated one writes one line at launch).
  virtual bool TasksWriteLogs() const { return true; }
  virtual Result<AdoptedProcess> Adopt(const std::string& state_dir) {
    return Status(StatusCode::kFailedPrecondition, "this launcher cannot adopt tasks (" + state_dir + ")");
  }
 private:
  std::map<uint64_t, LaunchRequest> deferred_;  // BeginLaunch's, by ticket
  uint64_t next_ticket_ = 1;
};

}  // namespace gpool::worker
