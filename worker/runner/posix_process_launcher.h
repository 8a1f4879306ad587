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
// NUMA pinning (LaunchRequest.numa), prepared before fork and applied by
// the child after the redirect: sched_setaffinity to the requested CPUs
// that this worker may use itself (none of them: the spec does not describe
// this machine, e.g. a simulated node, and the task is not pinned), then
// set_mempolicy through syscall(2) (no libnuma): MPOL_BIND to the nodes for
// single-numa-node, MPOL_PREFERRED for best-effort on one node. best-effort
// over several nodes sets no memory policy: the kernel's default, local
// allocation, already follows the CPU pinning, and MPOL_PREFERRED takes one
// node only. Nodes this worker may not allocate from are left out.
//
// A pinning call that fails is not fatal, for single-numa-node either: the
// scheduler already kept the task's GPUs on one NUMA node, which is what
// the policy promises; the CPU and memory binding on top is an
// optimisation whose failures come from the host (containers whose seccomp
// profile refuses set_mempolicy, cpusets, simulated specs), and failing the
// task would fail every retry of a correctly placed task on this node. The
// child reports the failure through the pipe and execs anyway; Launch logs
// a warning and adds a line to the task's log.
//
// With a CgroupTree, a task with a cgroup name runs in a cgroup of its own:
// the child joins it first thing after fork (through descriptors opened
// before fork), Signal reaches every process in it, and Reap reports the
// task only once the cgroup is empty, killing what its first process left
// behind. A cgroup of the same name left by a previous worker process (one
// that died) is emptied and replaced.
//
// Reap uses waitpid(pid, WNOHANG) on the pids it launched only, so it never
// steals children that other parts of the process started.
//
// Thread-safety: one thread. PR_SET_PDEATHSIG fires when the *thread* that
// forked exits, so call Launch from a thread that lives as long as the
// worker (the agent's).
#pragma once

#include <map>
#include <memory>
#include <set>

#include <spdlog/logger.h>

#include "worker/runner/numa_apply.h"
#include "worker/runner/process_launcher.h"

namespace gpool::worker {

class PosixProcessLauncher final : public ProcessLauncher {
 public:
  // `logger`: nullptr for spdlog's default.
  // `cgroups`: nullptr to track tasks by process group only.
  explicit PosixProcessLauncher(std::shared_ptr<spdlog::logger> logger = nullptr, CgroupTree* cgroups = nullptr);
  PosixProcessLauncher(const PosixProcessLauncher&) = delete;
  PosixProcessLauncher& operator=(const PosixProcessLauncher&) = delete;

  Result<int64_t> Launch(const LaunchRequest& request) override;
  Status Signal(int64_t pid, int signal) override;
  std::vector<ExitInfo> Reap() override;

 private:
  void ReportPinningFailure(int64_t pid, const LaunchRequest& request, const PreparedPinning& pinning, bool cpus,
                            int err);
  // A new cgroup for the request; one of that name (a task of a worker
  // process that died) is emptied and removed first.
  Result<std::unique_ptr<TaskCgroup>> NewCgroup(const LaunchRequest& request);

  std::shared_ptr<spdlog::logger> log_;
  CgroupTree* cgroups_ = nullptr;
  std::set<int64_t> children_;  // launched and not yet reaped
  std::map<int64_t, std::unique_ptr<TaskCgroup>> task_cgroups_;  // by the task's first pid
  // Tasks whose first process ended while others remain in their cgroup:
  // reported once the cgroup is empty.
  std::map<int64_t, ExitInfo> draining_;
};

}  // namespace gpool::worker
