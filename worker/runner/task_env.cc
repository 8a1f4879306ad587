#include "worker/runner/task_env.h"

#include <set>

#include "protocol/base/text.h"
#include "protocol/messages_worker.h"
#include "worker/runner/job_hosts.h"

namespace gpool::worker {
namespace {

uint32_t TotalCores(const NodeSpec& node) {
  uint32_t total = 0;
  for (const auto& gpu : node.gpus) total += gpu.cores;
  return total;
}

Status ValidateMig(const BindTask& bind) {
  if (bind.mig_profiles.empty()) {
    if (!bind.mig_starts.empty()) return Status::InvalidArgument("mig_starts: given without mig_profiles");
    return Status::Ok();
  }
  if (bind.mig_profiles.size() != bind.gpu_indices.size()) {
    return Status::InvalidArgument("mig_profiles: " + std::to_string(bind.mig_profiles.size()) + " profiles for " +
                                   std::to_string(bind.gpu_indices.size()) + " gpu_indices");
  }
  if (bind.mig_starts.size() != bind.mig_profiles.size()) {
    return Status::InvalidArgument("mig_starts: " + std::to_string(bind.mig_starts.size()) + " starts for " +
                                   std::to_string(bind.mig_profiles.size()) + " mig_profiles");
  }
  for (size_t i = 0; i < bind.mig_profiles.size(); ++i) {
    const std::string& profile = bind.mig_profiles[i];
    if (HasNul(profile) || profile.size() > 64 || profile.find(',') != std::string::npos) {
      return Status::InvalidArgument("mig_profiles[" + std::to_string(i) + "]: '" + profile.substr(0, 64) +
                                     "' is not a MIG profile");
    }
  }
  if (!bind.mig_profiles.empty() && IsGpuShare(bind)) {
    return Status::InvalidArgument("mig_profiles: a MIG instance cannot also be a GPU share");
  }
  return Status::Ok();
}

Status ValidateCores(const BindTask& bind, const NodeSpec& node) {
  const uint32_t total = TotalCores(node);
  std::set<uint32_t> seen;
  for (size_t i = 0; i < bind.cores.size(); ++i) {
    const uint32_t core = bind.cores[i];
    const std::string field = "cores[" + std::to_string(i) + "]";
    if (core >= total) {
      return Status::InvalidArgument(field + ": core " + std::to_string(core) + " does not exist on node " +
                                     node.name + " (it has " + std::to_string(total) + ")");
    }
    if (!seen.insert(core).second) {
      return Status::InvalidArgument(field + ": core " + std::to_string(core) + " is listed twice");
    }
  }
  return Status::Ok();
}

Status ValidateShareAndPolicy(const BindTask& bind) {
  const std::string& qos = bind.sharing_qos;
  if (!qos.empty() && !SharingQosFromString(qos)) return NotOneOf<SharingQos>("sharing_qos", qos);
  if (bind.gpu_compute_pct > 100) {
    return Status::InvalidArgument("gpu_compute_pct: " + std::to_string(bind.gpu_compute_pct) + " is above 100");
  }
  if (IsGpuShare(bind) && bind.gpu_indices.empty()) {
    return Status::InvalidArgument("gpu_memory_mib/gpu_compute_pct: a GPU share needs gpu_indices");
  }
  const std::string& numa = bind.numa_policy;
  if (!numa.empty() && !NumaPolicyFromString(numa)) return NotOneOf<NumaPolicy>("numa_policy", numa);
  return Status::Ok();
}

}  // namespace

Status ValidateBind(const BindTask& bind, const NodeSpec& node) {
  if (bind.command.empty() || bind.command[0].empty()) {
    return Status::InvalidArgument("command: must name a program to run");
  }
  GPOOL_RETURN_IF_ERROR(ValidateTaskHosts(bind.task_hosts));
  for (size_t i = 0; i < bind.command.size(); ++i) {
    if (HasNul(bind.command[i])) {
      return Status::InvalidArgument("command[" + std::to_string(i) + "]: holds a NUL byte");
    }
  }
  for (const auto& [key, value] : bind.env) {
    if (key.empty() || key.find('=') != std::string::npos || HasNul(key) || HasNul(value)) {
      return Status::InvalidArgument("env: '" + key.substr(0, 64) + "' is not a valid environment variable");
    }
  }
  std::set<uint32_t> seen;
  for (size_t i = 0; i < bind.gpu_indices.size(); ++i) {
    const uint32_t index = bind.gpu_indices[i];
    const std::string field = "gpu_indices[" + std::to_string(i) + "]";
    if (FindGpu(node, index) == nullptr) {
      return Status::InvalidArgument(field + ": GPU " + std::to_string(index) + " does not exist on node " +
                                     node.name + " (it has " + std::to_string(node.gpus.size()) + ")");
    }
    if (!seen.insert(index).second) {
      return Status::InvalidArgument(field + ": GPU " + std::to_string(index) + " is listed twice");
    }
  }
  if (!bind.gpu_uuids.empty()) {
    if (bind.gpu_uuids.size() != bind.gpu_indices.size()) {
      return Status::InvalidArgument("gpu_uuids: " + std::to_string(bind.gpu_uuids.size()) + " uuids for " +
                                     std::to_string(bind.gpu_indices.size()) + " gpu_indices");
    }
    for (size_t i = 0; i < bind.gpu_uuids.size(); ++i) {
      const GpuInfo* gpu = FindGpu(node, bind.gpu_indices[i]);
      if (gpu->uuid != bind.gpu_uuids[i]) {
        return Status::InvalidArgument("gpu_uuids[" + std::to_string(i) + "]: '" + bind.gpu_uuids[i].substr(0, 80) +
                                       "' is not GPU " + std::to_string(gpu->index) + " (" + gpu->uuid + ")");
      }
    }
  }
  GPOOL_RETURN_IF_ERROR(ValidateMig(bind));
  GPOOL_RETURN_IF_ERROR(ValidateCores(bind, node));
  return ValidateShareAndPolicy(bind);
}

Result<std::vector<std::string>> BuildTaskEnv(const BindTask& bind, const NodeSpec& node,
                                              const std::map<std::string, std::string>& base_env,
                                              const TaskEnvOptions& options) {
  std::map<std::string, std::string> env = base_env;
  for (const auto& [key, value] : bind.env) env[key] = value;
  GPOOL_RETURN_IF_ERROR(AddDeviceEnv(bind, node, options, env));

  env["GPOOL_JOB_ID"] = std::to_string(bind.task.job.value());
  env["GPOOL_JOB_NAME"] = bind.job_name;
  env["GPOOL_TASK_INDEX"] = std::to_string(bind.task.index);
  env["GPOOL_NUM_TASKS"] = std::to_string(bind.num_tasks);
  env["GPOOL_TASK_ATTEMPT"] = std::to_string(bind.task.attempt);
  env["GPOOL_NODE_NAME"] = node.name;

  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [key, value] : env) out.push_back(key + "=" + value);
  return out;
}

std::map<std::string, std::string> ParseEnvList(const char* const* entries) {
  std::map<std::string, std::string> env;
  for (; entries != nullptr && *entries != nullptr; ++entries) {
    std::string entry(*entries);
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

std::map<std::string, std::string> InheritedTaskEnv(const std::map<std::string, std::string>& worker_env,
                                                    const std::vector<std::string>& pass) {
  auto matches = [](const std::string& key, std::string_view pattern) {
    if (!pattern.empty() && pattern.back() == '*') {
      return key.compare(0, pattern.size() - 1, pattern.substr(0, pattern.size() - 1)) == 0;
    }
    return key == pattern;
  };
  std::map<std::string, std::string> env;
  for (const auto& [key, value] : worker_env) {
    // A GPOOL_* variable only when named exactly: no pattern lets the
    // worker's token or key paths through by accident.
    const bool gpool = key.rfind("GPOOL_", 0) == 0;
    bool keep = false;
    for (std::string_view always : {"PATH", "LANG", "LANGUAGE", "LC_*", "TZ"}) keep = keep || matches(key, always);
    for (const std::string& name : pass) keep = keep || (gpool ? key == name : matches(key, name));
    if (keep) env.emplace(key, value);
  }
  return env;
}

std::string MpiHostfile(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (const HostSlots& h : hosts) {
    const bool usable = !h.host.empty() && h.host.size() <= 253 && h.slots > 0 &&
                        h.host.find_first_of(" \t\r\n#=\0", 0, 7) == std::string::npos;
    if (!usable) return {};
    out += h.host + " slots=" + std::to_string(h.slots) + "\n";
  }
  return out;
}

std::string TaskHostfilePath(const std::string& log_dir, const TaskId& task) {
  return log_dir + "/" + std::to_string(task.job.value()) + "." + std::to_string(task.index) + "." +
         std::to_string(task.attempt) + ".hostfile";
}

std::string TaskShareCachePath(const std::string& log_dir, const TaskId& task) {
  return log_dir + "/" + std::to_string(task.job.value()) + "." + std::to_string(task.index) + "." +
         std::to_string(task.attempt) + ".vgpu.cache";
}

std::string TaskCgroupName(const TaskId& task) {
  return "task-" + std::to_string(task.job.value()) + "." + std::to_string(task.index) + "." +
         std::to_string(task.attempt);
}

std::string TaskStateDir(const std::string& log_dir, const TaskId& task) {
  return log_dir + "/" + std::to_string(task.job.value()) + "." + std::to_string(task.index) + "." +
         std::to_string(task.attempt) + ".state";
}

std::string TaskLogPath(const std::string& log_dir, const TaskId& task) {
  return log_dir + "/" + std::to_string(task.job.value()) + "." + std::to_string(task.index) + "." +
         std::to_string(task.attempt) + ".log";
}

}  // namespace gpool::worker
