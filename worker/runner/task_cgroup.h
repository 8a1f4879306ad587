// Cgroups for tasks: every task runs in a cgroup of its own, so the worker
// tracks and kills its whole process tree. Children that double-fork, call
// setsid or setpgid, or are re-parented to init stay in the task's cgroup,
// where a process group or PR_SET_PDEATHSIG cannot follow them. A task's CPU
// and memory requests become the cgroup's limits.
//
// Both layouts the kernel offers:
//   - v2: one unified hierarchy. Used when it holds the controllers we need
//     (memory, cpu, pids; the freezer is built in). Kill is cgroup.kill
//     where the kernel has it (5.14), else freeze, SIGKILL each pid, thaw.
//   - v1: one hierarchy per controller. The freezer hierarchy tracks the
//     tree (freeze, SIGKILL each pid, thaw); pids, memory and cpu carry the
//     limits where they are mounted.
//
// Exclusive whole cores (CgroupLimits::cpuset_cpus) go in a cpuset: v2's
// cpuset controller (enabled down to the tasks' parent where the kernel
// offers it), or v1's cpuset hierarchy. A cpuset is the kernel's: unlike
// sched_setaffinity, the task cannot widen it. v1 cpusets start empty, so
// the levels above the tasks copy their parent's cpus and mems. A task
// without exclusive cores gets the shared pool as its cpuset
// (CgroupLimits::shared_cpus, shared_cpu_pool.h), or, without one, no cpuset
// directory (it runs in the worker's). Where no cpuset can be made, a task
// asking for exclusive cores is refused (FailedPrecondition) unless its
// limits allow the affinity fallback.
// Production machines mostly run v2; this machine and CI have v1 writable
// and an empty unified hierarchy, so both paths are exercised.
//
// Layout on disk: <hierarchy>/gpool/<scope>/<task>, where scope names the
// worker (its node), so two workers on one host never share a subtree.
//
// A process joins a task's cgroup by writing "0" to cgroup.procs, which the
// child does between fork and exec through descriptors opened before fork
// (JoinFds), so the task is inside from its first instruction and nothing
// it starts can escape.
//
// Thread-safety: none; one thread (the runner's).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "protocol/base/status.h"
#include "worker/runner/device_rules.h"

namespace gpool::worker {

struct CgroupLimits {
  uint64_t cpu_milli = 0;   // 0: no CPU limit
  uint64_t memory_mib = 0;  // 0: no memory limit
  // Device nodes the task may not open (device_rules.h): v1 devices.deny
  // lines, v2 a device program. Non-empty where the layout cannot enforce
  // it (v1 without a devices hierarchy): the cgroup is not created.
  std::vector<DeviceRule> deny_devices;
  // Exclusive whole cores: the CPU ids the task alone runs on, as a cpuset;
  // empty: no cpuset. cpuset_mems: the memory nodes it may allocate from
  // as a cpulist ("0"); empty: those of the worker's subtree.
  std::vector<uint32_t> cpuset_cpus;
  std::string cpuset_mems;
  // A task without exclusive cores: the node's shared pool when it starts
  // (shared_cpu_pool.h), written as its cpuset so it stays off the cores
  // others hold exclusively; the pool rewrites it as those come and go.
  // Ignored when cpuset_cpus is set; empty, or no cpuset possible: no
  // cpuset (the task runs on the worker's CPUs, as before issue 50).
  std::vector<uint32_t> shared_cpus;
  // Refuse the cgroup when no cpuset can carry cpuset_cpus. False only where
  // the node's operator allowed the fallback (gpool-worker
  // --exclusive-cores-fallback=affinity): the task then runs pinned by
  // sched_setaffinity alone, which it could undo.
  bool cpuset_required = true;
};

enum class CgroupLayout : uint8_t { kV1, kV2 };

// The files (relative to the task's directory; v1: "<hierarchy>/<file>")
// and values that carry `limits`: memory in bytes, CPU as a CFS quota per
// 100 ms period (1000 milli-CPU = one CPU); v1 also one devices.deny line
// per denied device (v2 carries those in a program, not a file); the
// cpuset's cpus (cpuset_cpus, else shared_cpus) and mems (v1 needs mems
// set before a process may join: Create fills an empty cpuset_mems from the
// parent's before it asks).
std::vector<std::pair<std::string, std::string>> CgroupLimitFiles(CgroupLayout layout, const CgroupLimits& limits);

class TaskCgroup {
 public:
  TaskCgroup(const TaskCgroup&) = delete;
  TaskCgroup& operator=(const TaskCgroup&) = delete;
  ~TaskCgroup();  // closes the join descriptors; the directories stay until Remove

  const std::string& name() const { return name_; }
  // Descriptors on cgroup.procs of each directory the task belongs in,
  // O_WRONLY|O_CLOEXEC: the child writes "0" to each before exec.
  const std::vector<int>& JoinFds() const { return join_fds_; }
  void CloseJoinFds();
  // The processes in the task's cgroup now.
  std::vector<int64_t> Pids() const;
  bool Empty() const { return Pids().empty(); }
  // Sends `signal` to every process in the cgroup, except members of
  // process group `already_signalled_group` (when not 0): the caller has
  // signalled that group, and a second SIGTERM would run a task's trap twice.
  void SignalAll(int signal, int64_t already_signalled_group = 0) const;
  // Kills every process in it, frozen first so none can fork meanwhile.
  // Returns once SIGKILL was sent to all; they are gone when Empty().
  void KillAll() const;
  // Removes the directories; FailedPrecondition while processes remain.
  Status Remove();
  // Kills until empty (up to about 5 s, for processes slow to die), then
  // removes: for a cgroup whose task is over. FailedPrecondition when
  // something would not die in time.
  Status Drain();

 private:
  friend class CgroupTree;
  TaskCgroup(std::string name, CgroupLayout layout, std::vector<std::string> dirs, std::string tracker);

  std::string name_;
  CgroupLayout layout_;
  std::vector<std::string> dirs_;  // every directory of this task (v2: one)
  std::string tracker_;            // the directory whose cgroup.procs lists the tree (v2 dir, v1 freezer)
  std::vector<int> join_fds_;
};

class CgroupTree {
 public:
  ~CgroupTree();  // removes this worker's subtree when no task cgroup is left in it
  // Finds the layout under `mount_root` (normally /sys/fs/cgroup) and makes
  // this worker's subtree gpool/<scope> in it. Unavailable, saying why,
  // when neither layout is usable (not root, no freezer, read-only).
  static Result<std::unique_ptr<CgroupTree>> Open(const std::string& mount_root, const std::string& scope);

  CgroupLayout layout() const { return layout_; }
  const std::string& mount_root() const { return mount_root_; }
  const std::string& scope() const { return scope_; }
  std::string Describe() const;
  // Whether tasks here can get a cpuset (exclusive whole cores); when not,
  // why (for the worker's log and the refusals).
  bool cpuset_available() const { return cpuset_why_not_.empty(); }
  const std::string& cpuset_why_not() const { return cpuset_why_not_; }
  // The CPUs this worker's subtree may use (v1: its cpuset.cpus, copied from
  // the parent at Open; v2: its cpuset.cpus.effective): what the shared
  // pool is cut from. FailedPrecondition without cpusets, Unavailable when
  // the file cannot be read or parsed.
  Result<std::vector<uint32_t>> AllowedCpus() const;
  // Rewrites the cpuset.cpus of task `name`'s cgroup: the shared pool
  // narrowing or widening a running task (the kernel moves its threads at
  // once). NotFound when that task has no cpuset directory (v1: one started
  // without a cpuset); Unavailable when the kernel refuses the value.
  Status SetTaskCpus(const std::string& name, const std::vector<uint32_t>& cpus);
  // Leaves this worker's subtree in place when destroyed: for a
  // gpool-task-supervisor, whose tree is one of many over the same subtree.
  void KeepSubtree() { keep_subtree_ = true; }  // "v1 (freezer, pids, memory, cpu) under /sys/fs/cgroup"
  // A new cgroup for task `name` (a file name: [A-Za-z0-9._-]) with these
  // limits; AlreadyExists when one of that name is there (a task of a
  // previous worker, see Adopt).
  Result<std::unique_ptr<TaskCgroup>> Create(const std::string& name, const CgroupLimits& limits);
  // Create, but a cgroup of that name already there (left by a task of a
  // worker or supervisor that died: an old copy of this task, which must not
  // run beside the new one) is emptied and replaced first; `killed` gets how
  // many processes it still had.
  Result<std::unique_ptr<TaskCgroup>> CreateReplacing(const std::string& name, const CgroupLimits& limits,
                                                      size_t* killed);
  // The cgroup of a task a previous worker process started, if it exists.
  std::unique_ptr<TaskCgroup> Adopt(const std::string& name);
  // Names of the task cgroups in this worker's subtree.
  std::vector<std::string> List() const;
  // Empties and removes every task cgroup here but those `keep` names (the
  // tasks a live gpool-task-supervisor still holds, which a restarted worker
  // adopts): at start, what a worker process that died left running with no
  // one watching it (its tasks are reported lost, so nothing of them may run
  // on). Returns the names emptied, with the number of processes each still
  // had.
  std::vector<std::pair<std::string, size_t>> KillLeftovers(
      const std::function<bool(const std::string& name)>& keep = nullptr);

 private:
  CgroupTree(CgroupLayout layout, std::string mount_root, std::string scope, std::vector<std::string> bases,
             std::string tracker_base);
  // v1: the cpuset hierarchy's base among bases_, "" when not used.
  std::string CpusetBase() const;

  CgroupLayout layout_;
  std::string mount_root_;
  std::string scope_;
  bool keep_subtree_ = false;
  std::vector<std::string> bases_;  // gpool/<scope> in each hierarchy used
  std::string tracker_base_;       // the one whose task dirs track the tree
  std::string cpuset_why_not_;     // empty: cpusets can be made (see cpuset_available)
};

}  // namespace gpool::worker
