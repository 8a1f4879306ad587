// What the worker does to keep a task to what is its own (issue 31), decided
// per task before launch; the launch itself (namespaces, identity drop,
// device cgroup) is task_exec.h, task_cgroup.h and device_rules.h.
//
// With isolation on (the worker runs as root and was not told otherwise):
//   - the task runs as the bind's run_as identity, else the worker's
//     --task-user (default nobody, 65534:65534); never as uid 0 unless
//     --task-user names root;
//   - in its own PID and mount namespaces with /proc remounted (only under
//     a supervisor, which every real worker uses);
//   - in its own working directory <tasks>/<job>.<index>.<attempt>.work,
//     0700 and owned by that identity; its log is 0600 and owned by it
//     (the worker, root, still reads it for `gpool logs`), and so is its GPU
//     share cache file; the task state directory (bind, launch spec: the
//     job's env) is 0700 root; the tasks directory is 0711 (the task can
//     reach its own entries and the job's hosts files by name, not list
//     others');
//   - with no access to the node's GPU device nodes it was not granted
//     (device_rules.h), where those nodes exist, nor to other accelerator
//     families' devices and control nodes it holds none of
//     (vendor_device_nodes.h).
// With isolation off (not root) tasks run as the worker's user, as before.
//
// Thread-safety: pure functions plus file-system calls; the runner's thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/messages_worker.h"
#include "protocol/model/run_as.h"
#include "protocol/types.h"
#include "worker/runner/device_rules.h"
#include "worker/runner/process_launcher.h"

namespace gpool::worker {

struct TaskIsolationOptions {
  bool enabled = false;
  // Who tasks without a run_as mapping run as (--task-user).
  TaskIdentity default_identity;
  // --task-user named root: uid 0 is allowed, for the default and in binds.
  bool allow_root = false;
  // Own PID and mount namespaces (the launcher must supervise, see
  // LaunchRequest::own_pid_namespace).
  bool pid_namespace = true;
  // Device node of GPU index i: GpuDeviceNodePath(pattern, i); empty: no
  // device rules.
  std::string gpu_device_nodes = "/dev/nvidia%u";
  // Where the other accelerator families' device nodes live
  // (vendor_device_nodes.h: /dev/davinciN, /dev/kfd, /dev/dri/renderD...);
  // empty: no device rules for them.
  std::string vendor_device_root = "/dev";
};

// --task-user NAME|UID[:GID]: a user name (its uid and primary gid from
// the passwd database; "nobody" is 65534:65534 where the database lacks
// it), or a number with an optional group number (default: the same
// number). `allow_root` is set when the value names uid 0.
Result<TaskIdentity> ParseTaskUser(const std::string& value, bool* allow_root);

// The identity a bind runs as: its run_as, else the default. uid 0 or gid
// 0 without allow_root is FailedPrecondition (the task does not start).
Result<TaskIdentity> IdentityFor(const RunAs& run_as, const TaskIsolationOptions& options);

// The task's working directory.
std::string TaskWorkDir(const std::string& log_dir, const TaskId& task);

// Fills in the request's isolation (identity, namespaces, working
// directory, device rules) and prepares its files (above). `owned_files`
// are created if missing and given to the task (its log, its share cache).
Status ApplyTaskIsolation(const TaskIsolationOptions& options, const std::string& log_dir, const TaskId& task,
                          const BindTask& bind, const NodeSpec& node, const std::vector<std::string>& owned_files,
                          LaunchRequest& request);

}  // namespace gpool::worker
