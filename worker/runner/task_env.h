// Builds the environment and argv a task process starts with, from a
// BindTask and what this node has. Pure; the rules live in one place:
//
//   base env (the worker's own, when inherited) < BindTask.env < gpool's vars
//   CUDA_VISIBLE_DEVICES    comma-separated GPU indices ("" when no GPUs)
//   NVIDIA_VISIBLE_DEVICES  comma-separated GPU uuids, or "void"
//   HIP_VISIBLE_DEVICES     indices, when the node has vendor "amd" GPUs
//   ASCEND_RT_VISIBLE_DEVICES indices, when it has "huawei"/"ascend" NPUs
//   GPOOL_JOB_ID GPOOL_JOB_NAME GPOOL_TASK_INDEX GPOOL_NUM_TASKS
//   GPOOL_TASK_ATTEMPT GPOOL_NODE_NAME GPOOL_GPU_UUIDS
//
// ValidateBind checks a BindTask against the node: every gpu index exists
// and is used once, gpu_uuids (when given) match those indices, the command
// is not empty, and no string holds a NUL byte. Errors name the field.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/messages.h"
#include "protocol/types.h"

namespace gpool::worker {

Status ValidateBind(const BindTask& bind, const NodeSpec& node);

// The uuids of the bound GPUs, in bind order (from the node spec).
std::vector<std::string> BoundGpuUuids(const BindTask& bind, const NodeSpec& node);

// "KEY=value" entries, sorted by key, each key once.
std::vector<std::string> BuildTaskEnv(const BindTask& bind, const NodeSpec& node,
                                      const std::map<std::string, std::string>& base_env);

// Parses "KEY=value" strings (e.g. environ) into a map; entries without '='
// are skipped.
std::map<std::string, std::string> ParseEnvList(const char* const* entries);

// <log_dir>/<job>.<index>.<attempt>.log
std::string TaskLogPath(const std::string& log_dir, const TaskId& task);

// An MPI hostfile ("host slots=N" per line) from GPOOL_HOSTS ("host:N,..."),
// which the coordinator sets for gang tasks; empty when the value is
// malformed. The worker writes it next to the task's log and points
// GPOOL_HOSTFILE at it.
std::string MpiHostfile(const std::string& hosts);
// <log_dir>/<job>.<index>.<attempt>.hostfile
std::string TaskHostfilePath(const std::string& log_dir, const TaskId& task);

}  // namespace gpool::worker
