#include "protocol/validate.h"

#include <algorithm>

#include <set>
#include <string>

namespace gpool {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.';
}

Status ValidateName(const std::string& field, const std::string& name, uint32_t max_length) {
  if (name.empty()) return Status::InvalidArgument(field + ": must not be empty");
  if (name.size() > max_length) {
    return Status::InvalidArgument(field + ": longer than " + std::to_string(max_length) + " characters");
  }
  for (char c : name) {
    if (!IsNameChar(c)) {
      return Status::InvalidArgument(field + ": '" + name.substr(0, max_length) +
                                     "' may only contain letters, digits, '-', '_' and '.'");
    }
  }
  return Status::Ok();
}

bool IsEnvName(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// The worker sets these from the placement; a spec must not fight it.
bool IsDeviceVisibilityVariable(const std::string& name) {
  static const std::set<std::string> kReserved = {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
                                                  "HIP_VISIBLE_DEVICES",  "ROCR_VISIBLE_DEVICES",
                                                  "ASCEND_RT_VISIBLE_DEVICES"};
  return kReserved.count(name) > 0;
}

}  // namespace

Status ValidateJobSpec(const JobSpec& spec, const SpecLimits& limits) {
  GPOOL_RETURN_IF_ERROR(ValidateName("name", spec.name, limits.max_name_length));
  GPOOL_RETURN_IF_ERROR(ValidateName("queue", spec.queue, limits.max_name_length));
  if (spec.tasks.empty()) return Status::InvalidArgument("tasks: at least one task group is required");
  uint64_t total = 0;
  std::set<std::string> group_names;
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const auto& group = spec.tasks[i];
    const std::string prefix = "tasks[" + std::to_string(i) + "]";
    GPOOL_RETURN_IF_ERROR(ValidateName(prefix + ".name", group.name, limits.max_name_length));
    if (!group_names.insert(group.name).second) {
      return Status::InvalidArgument(prefix + ".name: '" + group.name + "' is used by another task group");
    }
    if (group.replicas == 0) return Status::InvalidArgument(prefix + ".replicas: must be at least 1");
    total += group.replicas;
    if (group.command.empty() || group.command[0].empty()) {
      return Status::InvalidArgument(prefix + ".command: must name a program to run");
    }
    if (group.command.size() > limits.max_command_args) {
      return Status::InvalidArgument(prefix + ".command: more than " + std::to_string(limits.max_command_args) +
                                     " arguments");
    }
    if (group.env.size() > limits.max_env_vars) {
      return Status::InvalidArgument(prefix + ".env: more than " + std::to_string(limits.max_env_vars) +
                                     " variables");
    }
    for (const auto& [key, value] : group.env) {
      if (!IsEnvName(key)) {
        return Status::InvalidArgument(prefix + ".env: '" + key.substr(0, 64) +
                                       "' is not a valid environment variable name");
      }
      if (key.rfind("GPOOL_", 0) == 0 || IsDeviceVisibilityVariable(key)) {
        return Status::InvalidArgument(prefix + ".env: " + key + " is set by gpool and cannot be overridden");
      }
    }
    const auto& res = group.resources;
    if (res.gpus > limits.max_gpus_per_task) {
      return Status::InvalidArgument(prefix + ".resources.gpus: " + std::to_string(res.gpus) +
                                     " exceeds the per-task maximum of " + std::to_string(limits.max_gpus_per_task));
    }
    if (res.cpu_milli > limits.max_cpu_milli_per_task) {
      return Status::InvalidArgument(prefix + ".resources.cpu_milli: exceeds the per-task maximum of " +
                                     std::to_string(limits.max_cpu_milli_per_task));
    }
    if (res.memory_mib > limits.max_memory_mib_per_task) {
      return Status::InvalidArgument(prefix + ".resources.memory_mib: exceeds the per-task maximum of " +
                                     std::to_string(limits.max_memory_mib_per_task));
    }
  }
  if (total > limits.max_tasks_per_job) {
    return Status::InvalidArgument("tasks: " + std::to_string(total) + " replicas in all exceeds the maximum of " +
                                   std::to_string(limits.max_tasks_per_job) + " per job");
  }
  return Status::Ok();
}

Status ValidateNodeSpec(const NodeSpec& spec) {
  // Far above any real node; bounds what one registration can make us store.
  constexpr size_t kMaxDevices = 1024;
  constexpr size_t kMaxLabels = 256;
  GPOOL_RETURN_IF_ERROR(ValidateName("node.name", spec.name, 253));
  if (spec.gpus.size() > kMaxDevices) {
    return Status::InvalidArgument("node.gpus: " + std::to_string(spec.gpus.size()) + " devices exceeds the maximum of " +
                                   std::to_string(kMaxDevices));
  }
  if (spec.labels.size() > kMaxLabels || spec.numa.size() > kMaxDevices || spec.nics.size() > kMaxDevices) {
    return Status::InvalidArgument("node: more than " + std::to_string(kMaxLabels) + " labels or " +
                                   std::to_string(kMaxDevices) + " NUMA nodes or NICs");
  }
  std::set<uint32_t> indices;
  std::set<std::string> uuids;
  for (size_t i = 0; i < spec.gpus.size(); ++i) {
    const auto& gpu = spec.gpus[i];
    const std::string prefix = "node.gpus[" + std::to_string(i) + "]";
    if (!indices.insert(gpu.index).second) {
      return Status::InvalidArgument(prefix + ".index: " + std::to_string(gpu.index) + " is used twice");
    }
    if (gpu.uuid.empty()) return Status::InvalidArgument(prefix + ".uuid: must not be empty");
    if (!uuids.insert(gpu.uuid).second) return Status::InvalidArgument(prefix + ".uuid: '" + gpu.uuid + "' is used twice");
    for (uint32_t peer : gpu.nvlink_peers) {
      if (peer == gpu.index) return Status::InvalidArgument(prefix + ".nvlink_peers: a GPU cannot link to itself");
    }
  }
  for (size_t i = 0; i < spec.gpus.size(); ++i) {
    for (uint32_t peer : spec.gpus[i].nvlink_peers) {
      if (!indices.count(peer)) {
        return Status::InvalidArgument("node.gpus[" + std::to_string(i) + "].nvlink_peers: GPU " +
                                       std::to_string(peer) + " does not exist on this node");
      }
    }
  }
  return Status::Ok();
}

bool IsNodePool(std::string_view pool) { return pool == "public" || pool == "pooled" || pool == "exclusive"; }

namespace {

bool AllOf(std::string_view s, std::string_view extra) {
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           extra.find(c) != std::string_view::npos;
  });
}

Status ValidateLabelKey(const std::string& key) {
  if (key.empty() || key.size() > 63 || !AllOf(key, "._/-")) {
    return Status::InvalidArgument("label key '" + key.substr(0, 64) +
                                   "': 1-63 characters of letters, digits, '.', '_', '/' and '-'");
  }
  return Status::Ok();
}

}  // namespace

Status ValidateUpdateNode(const UpdateNode& update) {
  constexpr size_t kMaxLabelChanges = 256;
  GPOOL_RETURN_IF_ERROR(ValidateName("node", update.node, 253));
  if (update.op == "cordon" || update.op == "uncordon") return Status::Ok();
  if (update.op == "pool") {
    if (!IsNodePool(update.pool)) {
      return Status::InvalidArgument("pool: '" + update.pool.substr(0, 64) + "' is not public, pooled or exclusive");
    }
    return Status::Ok();
  }
  if (update.op != "label") {
    return Status::InvalidArgument("op: '" + update.op.substr(0, 32) + "' is not cordon, uncordon, label or pool");
  }
  if (update.labels.empty() && update.remove_labels.empty()) {
    return Status::InvalidArgument("labels: nothing to set or remove");
  }
  if (update.labels.size() + update.remove_labels.size() > kMaxLabelChanges) {
    return Status::InvalidArgument("labels: more than " + std::to_string(kMaxLabelChanges) + " changes at once");
  }
  for (const auto& [key, value] : update.labels) {
    GPOOL_RETURN_IF_ERROR(ValidateLabelKey(key));
    if (value.size() > 63 || !AllOf(value, "._-")) {
      return Status::InvalidArgument("label " + key + ": value '" + value.substr(0, 64) +
                                     "' must be at most 63 letters, digits, '.', '_' and '-'");
    }
  }
  for (const auto& key : update.remove_labels) {
    GPOOL_RETURN_IF_ERROR(ValidateLabelKey(key));
    if (update.labels.count(key)) return Status::InvalidArgument("label " + key + ": both set and removed");
  }
  return Status::Ok();
}

}  // namespace gpool
