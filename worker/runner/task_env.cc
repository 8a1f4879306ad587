#include "worker/runner/task_env.h"

#include <set>

namespace gpool::worker {
namespace {

bool HasNul(const std::string& s) { return s.find('\0') != std::string::npos; }

const GpuInfo* FindGpu(const NodeSpec& node, uint32_t index) {
  for (const auto& gpu : node.gpus) {
    if (gpu.index == index) return &gpu;
  }
  return nullptr;
}

template <typename T>
std::string Join(const std::vector<T>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ',';
    if constexpr (std::is_same_v<T, std::string>) {
      out += item;
    } else {
      out += std::to_string(item);
    }
  }
  return out;
}

}  // namespace

Status ValidateBind(const BindTask& bind, const NodeSpec& node) {
  if (bind.command.empty() || bind.command[0].empty()) {
    return Status::InvalidArgument("command: must name a program to run");
  }
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
  return Status::Ok();
}

std::vector<std::string> BoundGpuUuids(const BindTask& bind, const NodeSpec& node) {
  std::vector<std::string> uuids;
  for (uint32_t index : bind.gpu_indices) {
    const GpuInfo* gpu = FindGpu(node, index);
    uuids.push_back(gpu != nullptr ? gpu->uuid : std::string());
  }
  return uuids;
}

std::vector<std::string> BuildTaskEnv(const BindTask& bind, const NodeSpec& node,
                                      const std::map<std::string, std::string>& base_env) {
  std::map<std::string, std::string> env = base_env;
  for (const auto& [key, value] : bind.env) env[key] = value;

  const std::string indices = Join(bind.gpu_indices);
  const std::vector<std::string> uuids = BoundGpuUuids(bind, node);
  env["CUDA_VISIBLE_DEVICES"] = indices;
  env["NVIDIA_VISIBLE_DEVICES"] = uuids.empty() ? "void" : Join(uuids);
  std::set<std::string> vendors;
  for (const auto& gpu : node.gpus) vendors.insert(gpu.vendor);
  if (vendors.count("amd")) env["HIP_VISIBLE_DEVICES"] = indices;
  if (vendors.count("huawei") || vendors.count("ascend")) env["ASCEND_RT_VISIBLE_DEVICES"] = indices;

  env["GPOOL_JOB_ID"] = std::to_string(bind.task.job.value());
  env["GPOOL_JOB_NAME"] = bind.job_name;
  env["GPOOL_TASK_INDEX"] = std::to_string(bind.task.index);
  env["GPOOL_NUM_TASKS"] = std::to_string(bind.num_tasks);
  env["GPOOL_TASK_ATTEMPT"] = std::to_string(bind.task.attempt);
  env["GPOOL_NODE_NAME"] = node.name;
  env["GPOOL_GPU_UUIDS"] = Join(uuids);

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

std::string MpiHostfile(const std::string& hosts) {
  std::string out;
  size_t start = 0;
  while (start < hosts.size()) {
    size_t comma = hosts.find(',', start);
    if (comma == std::string::npos) comma = hosts.size();
    const std::string entry = hosts.substr(start, comma - start);
    start = comma + 1;
    const size_t colon = entry.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == entry.size()) return {};
    const std::string slots = entry.substr(colon + 1);
    if (slots.find_first_not_of("0123456789") != std::string::npos) return {};
    out += entry.substr(0, colon) + " slots=" + slots + "\n";
  }
  return out;
}

std::string TaskHostfilePath(const std::string& log_dir, const TaskId& task) {
  return log_dir + "/" + std::to_string(task.job.value()) + "." + std::to_string(task.index) + "." +
         std::to_string(task.attempt) + ".hostfile";
}

std::string TaskLogPath(const std::string& log_dir, const TaskId& task) {
  return log_dir + "/" + std::to_string(task.job.value()) + "." + std::to_string(task.index) + "." +
         std::to_string(task.attempt) + ".log";
}

}  // namespace gpool::worker
