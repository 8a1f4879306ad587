// The real ProcessLauncher. Two ways to start a task:
//
// Supervised (options.supervisor set and the request has a state_dir): the
// task outlives this process. Launch writes the request to the task's state
// directory (supervisor_state.h) and starts a gpool-task-supervisor for it,
// detached from the worker: double-forked (its parent is init, not the
// worker), in a session of its own, outside the task's cgroup, with no
// parent-death signal. The supervisor starts the task exactly as below
// (task_exec.h), records its pid, tells Launch through a pipe that the task
// exec'd (or why not), and stays to wait for it. When the task's first
// process ends it empties the task's cgroup, writes the exit record, and
// exits; with options.lease_path it also kills the task when the node lease
// (lease_file.h) runs out. Reap learns of an end from that record, not from
// waitpid, so it works the same for a task this process launched and one it
// adopted from a previous worker process (Adopt). A supervisor that dies
// without a record (noticed within liveness_check_ms through its lock) has
// lost its task: what is left in the task's cgroup is killed and the task
// reported with exit code 255 and a reason saying so.
//
// Direct (no supervisor, or no state_dir): fork + execvp from this process
// (task_exec.h): the task's first process dies with the worker
// (PR_SET_PDEATHSIG), and Reap uses waitpid(pid, WNOHANG) on the pids it
// launched only, so it never steals children that other parts of the
// process started.
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
// child reports the failure and execs anyway; Launch logs a warning and a
// line goes into the task's log.
//
// With a CgroupTree, a task with a cgroup name runs in a cgroup of its own:
// the child joins it first thing after fork (through descriptors opened
// before fork), Signal reaches every process in it, and Reap reports the
// task only once the cgroup is empty, what its first process left behind
// having been killed. A cgroup of the same name left by a previous worker
// process (one that died) is emptied and replaced.
//
// Where that tree can make cpusets, the launcher keeps the node's shared
// CPU pool (shared_cpu_pool.h): a task with exclusive cores takes them from
// every other task's cpuset before it is launched and gives them back when
// it is reaped (or its launch fails); every other task starts with the pool
// as its cpuset and is kept in step. An adopted shared task keeps the
// cpuset it has until the pool next changes.
//
// Thread-safety: one thread. PR_SET_PDEATHSIG fires when the *thread* that
// forked exits, so call Launch from a thread that lives as long as the
// worker (the agent's).
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <set>

#include <spdlog/logger.h>

#include "worker/runner/numa_apply.h"
#include "worker/runner/process_launcher.h"
#include "worker/runner/shared_cpu_pool.h"
#include "worker/runner/supervisor_state.h"

namespace gpool::worker {

struct PosixProcessLauncherOptions {
  std::shared_ptr<spdlog::logger> logger;  // nullptr: spdlog's default
  CgroupTree* cgroups = nullptr;           // not owned; nullptr: tasks tracked by process group only
  // The gpool-task-supervisor executable; empty: every task is started
  // directly and dies with this process.
  std::string supervisor;
  // The node lease each supervisor enforces (--lease, lease_file.h); empty:
  // none. With one, Launch also refuses (FailedPrecondition) while the
  // lease does not allow running.
  std::string lease_path;
  // How often Reap checks that each supervisor still lives.
  int64_t liveness_check_ms = 250;
};

class PosixProcessLauncher final : public ProcessLauncher {
 public:
  explicit PosixProcessLauncher(PosixProcessLauncherOptions options);
  // `logger`: nullptr for spdlog's default.
  // `cgroups`: nullptr to track tasks by process group only.
  explicit PosixProcessLauncher(std::shared_ptr<spdlog::logger> logger = nullptr, CgroupTree* cgroups = nullptr);
  PosixProcessLauncher(const PosixProcessLauncher&) = delete;
  PosixProcessLauncher& operator=(const PosixProcessLauncher&) = delete;

  Result<int64_t> Launch(const LaunchRequest& request) override;
  // Supervised launches fork their supervisor in BeginLaunch and read its
  // answer in FinishLaunch; direct ones happen in FinishLaunch.
  uint64_t BeginLaunch(const LaunchRequest& request) override;
  Result<int64_t> FinishLaunch(uint64_t ticket) override;
  Status Signal(int64_t pid, int signal) override;
  std::vector<ExitInfo> Reap() override;
  Result<AdoptedProcess> Adopt(const std::string& state_dir) override;
  // The shared CPU pool; nullptr without cgroups that can make cpusets.
  const SharedCpuPool* shared_cpu_pool() const { return pool_.get(); }

 private:
  // A task under a supervisor, launched or adopted.
  struct Supervised {
    std::string state_dir;
    std::string cgroup;  // its cgroup's name; empty: none
    int64_t next_liveness_check_ms = 0;
  };

  // A supervised launch between its halves.
  struct Starting {
    Status status;          // not ok: BeginSupervised failed, nothing runs
    pid_t intermediate = 0;  // the first fork, reaped in FinishSupervised
    int status_fd = -1;      // the supervisor's answer
    std::string state_dir, supervisor_log, cgroup, log_path;
    // In the shared pool from BeginSupervised on (EnterPool): its cgroup,
    // whether it holds exclusive cores, the pool's generation it was made from.
    std::string pool_cgroup;
    bool exclusive = false;
    uint64_t pool_generation = 0;
    std::vector<uint32_t> numa_cpus;  // its NUMA pinning (SharedCpuPool::Join's `within`)
  };

  Result<int64_t> LaunchDirect(const LaunchRequest& request);
  Result<int64_t> ForkDirect(const LaunchRequest& request, const CgroupLimits& limits);
  // The shared pool before a launch: an exclusive task's cores leave it
  // (SharedCpuPool::Hold), a shared task gets it in limits.shared_cpus.
  // Returns the pool's generation (0 without a pool).
  // A shared task pinned to NUMA CPUs (`numa_cpus`) gets the pool's among them.
  uint64_t EnterPool(const std::string& cgroup, CgroupLimits& limits, const std::vector<uint32_t>& numa_cpus);
  // After the launch answered: a shared task is kept in step, a failed
  // launch gives back what it held.
  void AfterLaunch(const std::string& cgroup, bool exclusive, bool ok, uint64_t generation,
                   const std::vector<uint32_t>& numa_cpus);
  Status CheckCpusetPossible(const LaunchRequest& request) const;
  Status BeginSupervised(const LaunchRequest& request, Starting& starting);
  Result<int64_t> FinishSupervised(const Starting& starting);
  void ReapDirect(std::vector<ExitInfo>& exited);
  void ReapSupervised(std::vector<ExitInfo>& exited);
  // A supervised task whose supervisor died without an exit record: kills
  // what is left in its cgroup, records the loss, returns its ExitInfo.
  ExitInfo Lost(int64_t pid, const std::string& state_dir, const std::string& cgroup);
  static ExitInfo FromRecord(const ExitRecord& record);

  PosixProcessLauncherOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  CgroupTree* cgroups_ = nullptr;
  std::unique_ptr<SharedCpuPool> pool_;  // where cgroups_ can make cpusets
  std::set<int64_t> children_;  // launched directly and not yet reaped
  std::map<int64_t, std::unique_ptr<TaskCgroup>> task_cgroups_;  // direct: by the task's first pid
  // Direct tasks whose first process ended while others remain in their
  // cgroup: reported once the cgroup is empty.
  std::map<int64_t, ExitInfo> draining_;
  std::map<int64_t, Supervised> supervised_;  // by the task's first pid
  std::map<uint64_t, Starting> starting_;      // BeginLaunch's supervised launches, by ticket
  uint64_t next_ticket_ = 1ull << 63;          // apart from the base class's tickets
  static constexpr int64_t kReapScanMs = 50;
  int64_t next_supervised_scan_ms_ = 0;  // CLOCK_MONOTONIC
};

}  // namespace gpool::worker
