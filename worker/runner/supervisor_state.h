// What a task's gpool-task-supervisor and the worker tell each other on
// disk, in the task's state directory (<data-dir>/tasks/<job>.<index>.<attempt>.state/):
//
//   launch           SupervisorSpec: what to start, written by the launcher
//                    before the supervisor starts
//   lock             flock(LOCK_EX)'ed by the supervisor for its whole life:
//                    the lock is free exactly when no supervisor runs, so a
//                    restarted worker tells a live supervisor from a dead one
//                    without trusting a pid that may have been reused
//   started          StartRecord: the task's pid, once it has exec'd
//   exit             ExitRecord: how it ended, written only once its cgroup
//                    is empty (nothing of the task runs any more)
//   supervisor.log   the supervisor's own messages (its stderr)
//
// TaskManager keeps its own records in the same directory (task_manager.h).
// Every record is msgpack (protocol/wire.h), written atomically
// (atomic_file.h): a reader sees a whole record or none.
//
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "worker/runner/process_launcher.h"

namespace gpool::worker {

// The files above.
std::string SupervisorSpecPath(const std::string& state_dir);
std::string SupervisorLockPath(const std::string& state_dir);
std::string StartRecordPath(const std::string& state_dir);
std::string ExitRecordPath(const std::string& state_dir);
std::string SupervisorLogPath(const std::string& state_dir);

// A LaunchRequest as the supervisor gets it, with where the task's cgroup
// lives (cgroup_root empty: the task gets no cgroup).
struct SupervisorSpec {
  LaunchRequest request;
  std::string cgroup_root;   // the mount root, e.g. /sys/fs/cgroup (CgroupTree::Open)
  std::string cgroup_scope;  // this worker's subtree, gpool/<scope>

  template <typename V>
  void Fields(V& v) {
    v.Required("argv", request.argv);
    v.Optional("env", request.env);
    v.Required("log_path", request.log_path);
    v.Optional("numa_cpus", request.numa.cpus);
    v.Optional("numa_nodes", request.numa.nodes);
    v.Optional("numa_strict", request.numa.strict);
    v.Optional("cgroup", request.cgroup);
    v.Optional("hosts_file", request.hosts_file);
    v.Optional("cpu_milli", request.limits.cpu_milli);
    v.Optional("memory_mib", request.limits.memory_mib);
    v.Optional("identity_set", request.identity.set);
    v.Optional("uid", request.identity.uid);
    v.Optional("gid", request.identity.gid);
    v.Optional("user", request.identity.user);
    v.Optional("own_pid_namespace", request.own_pid_namespace);
    v.Optional("work_dir", request.work_dir);
    v.Optional("deny_devices", request.limits.deny_devices);
    v.Optional("cpuset_cpus", request.limits.cpuset_cpus);
    v.Optional("shared_cpus", request.limits.shared_cpus);
    v.Optional("cpuset_mems", request.limits.cpuset_mems);
    v.Optional("cpuset_required", request.limits.cpuset_required);
    v.Optional("cgroup_root", cgroup_root);
    v.Optional("cgroup_scope", cgroup_scope);
  }
};

struct StartRecord {
  int64_t pid = 0;             // the task's first process; its process group id too
  int64_t supervisor_pid = 0;
  int64_t start_time_ms = 0;   // wall clock

  template <typename V>
  void Fields(V& v) {
    v.Required("pid", pid);
    v.Optional("supervisor_pid", supervisor_pid);
    v.Optional("start_time_ms", start_time_ms);
  }
};

// Reasons an exit record gives.
inline constexpr char kExitReasonExited[] = "exited";
inline constexpr char kExitReasonLeaseExpired[] = "node lease expired";

struct ExitRecord {
  int64_t pid = 0;
  int32_t exit_code = 0;    // 128+signal when killed by a signal
  int32_t signal = 0;
  int64_t end_time_ms = 0;  // wall clock, once the cgroup was empty
  std::string reason;       // kExitReason*, with detail after ": " where there is some

  template <typename V>
  void Fields(V& v) {
    v.Required("pid", pid);
    v.Required("exit_code", exit_code);
    v.Optional("signal", signal);
    v.Optional("end_time_ms", end_time_ms);
    v.Optional("reason", reason);
  }
};

// What the supervisor tells its launcher through --status-fd once the task
// has exec'd (ok, pid) or could not start (the Status ForkTask returned,
// as code and message); then it closes the descriptor.
struct SupervisorHello {
  bool ok = false;
  int64_t pid = 0;
  uint32_t code = 0;  // StatusCode when !ok
  std::string message;
  std::vector<std::string> warnings;  // pinning calls that failed, for the worker's log

  template <typename V>
  void Fields(V& v) {
    v.Required("ok", ok);
    v.Optional("pid", pid);
    v.Optional("code", code);
    v.Optional("message", message);
    v.Optional("warnings", warnings);
  }
};

Status WriteSupervisorSpec(const std::string& state_dir, const SupervisorSpec& spec);
Result<SupervisorSpec> ReadSupervisorSpec(const std::string& state_dir);
Status WriteStartRecord(const std::string& state_dir, const StartRecord& record);
Result<StartRecord> ReadStartRecord(const std::string& state_dir);  // NotFound before the start
Status WriteExitRecord(const std::string& state_dir, const ExitRecord& record);
Result<ExitRecord> ReadExitRecord(const std::string& state_dir);  // NotFound while it runs

// True while a supervisor holds the directory's lock. A directory whose
// lock file cannot be opened (none was ever started there) has none.
bool SupervisorAlive(const std::string& state_dir);

// The cgroup names of the tasks under `tasks_dir` (each a *.state
// directory) whose supervisor is alive: what a starting worker must not
// kill as leftovers (CgroupTree::KillLeftovers).
std::set<std::string> LiveSupervisedCgroups(const std::string& tasks_dir);

}  // namespace gpool::worker
