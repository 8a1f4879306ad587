// Builds the environment and argv a task process starts with, from a
// BindTask and what this node has. Pure; the rules live in one place:
//
//   base env (the worker's own, when inherited) < BindTask.env < gpool's vars
//   CUDA_VISIBLE_DEVICES    comma-separated GPU indices ("" when no GPUs), or
//                           the MIG instance uuids of a MIG task
//   NVIDIA_VISIBLE_DEVICES  comma-separated GPU (or MIG instance) uuids, or "void"
//   each accelerator family's own variables (ASCEND_RT_VISIBLE_DEVICES,
//   XPU_VISIBLE_DEVICES, MACA_VISIBLE_DEVICES, TOPS_VISIBLE_DEVICES,
//   ROCR_/HIP_VISIBLE_DEVICES...), when the node has its devices:
//   vendor_env.h
//   GPOOL_JOB_ID GPOOL_JOB_NAME GPOOL_TASK_INDEX GPOOL_NUM_TASKS
//   GPOOL_TASK_ATTEMPT GPOOL_NODE_NAME GPOOL_GPU_UUIDS
//   GPU shares, MIG and NeuronCores: see device_env.h.
//
// ValidateBind checks a BindTask against the node: every gpu index exists
// and is used once, gpu_uuids (when given) match those indices, MIG
// profiles and starts come one per GPU, cores exist and are used once, the
// share, QoS and NUMA policy are ones this worker knows, the command is not
// empty, and no string holds a NUL byte. Errors name the field. Whether a
// MIG instance still exists is checked when the task starts (BuildTaskEnv).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/messages_worker.h"
#include "protocol/types.h"
#include "worker/runner/device_env.h"

namespace gpool::worker {

Status ValidateBind(const BindTask& bind, const NodeSpec& node);

// "KEY=value" entries, sorted by key, each key once. FailedPrecondition
// when a MIG instance of the bind is not on the node (the task must not
// start on another device).
Result<std::vector<std::string>> BuildTaskEnv(const BindTask& bind, const NodeSpec& node,
                                              const std::map<std::string, std::string>& base_env,
                                              const TaskEnvOptions& options = {});

// Parses "KEY=value" strings (e.g. environ) into a map; entries without '='
// are skipped.
std::map<std::string, std::string> ParseEnvList(const char* const* entries);

// What of the worker's own environment a task inherits: PATH, LANG,
// LANGUAGE, LC_*, TZ, and the names in `pass` (a name, or a prefix ending in
// '*', from --task-env-pass); a GPOOL_* variable (the worker's token or key
// paths may be among them) only when `pass` names it exactly. Everything else of the worker's stays with
// the worker; what gpool sets for the task (BuildTaskEnv) wins over these.
std::map<std::string, std::string> InheritedTaskEnv(const std::map<std::string, std::string>& worker_env,
                                                    const std::vector<std::string>& pass = {});

// <log_dir>/<job>.<index>.<attempt>.log
std::string TaskLogPath(const std::string& log_dir, const TaskId& task);
// <log_dir>/<job>.<index>.<attempt>.state: the task's records for a
// restarted worker and its supervisor's (supervisor_state.h, task_manager.h).
std::string TaskStateDir(const std::string& log_dir, const TaskId& task);
// The name of the task's cgroup: "task-<job>.<index>.<attempt>".
std::string TaskCgroupName(const TaskId& task);

// An MPI hostfile ("host slots=N" per line) from the host list a gang task's
// bind carries; empty when an entry is unusable (no host, a host with
// whitespace or a character a hostfile would misread, or no slots). The
// worker writes it next to the task's log and points GPOOL_HOSTFILE at it.
std::string MpiHostfile(const std::vector<HostSlots>& hosts);
// <log_dir>/<job>.<index>.<attempt>.hostfile
std::string TaskHostfilePath(const std::string& log_dir, const TaskId& task);
// <log_dir>/<job>.<index>.<attempt>.vgpu.cache: HAMi-core's accounting file
// for a GPU share (CUDA_DEVICE_MEMORY_SHARED_CACHE).
std::string TaskShareCachePath(const std::string& log_dir, const TaskId& task);

}  // namespace gpool::worker
