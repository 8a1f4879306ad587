#include "protocol/validate.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

#include <map>
#include <set>
#include <string>

#include "protocol/validate_session.h"
#include "protocol/wire.h"

namespace gpool {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.';
}

namespace {

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

// What the worker sets to isolate a task: the loader variables that carry
// the share enforcer (a job that unset or replaced LD_PRELOAD, or pointed
// LD_LIBRARY_PATH at its own libcuda, or named an LD_AUDIT library that
// rebinds symbols past the preloaded one, would escape its GPU share), and the
// share limits and their cache file (worker/runner/device_env.cc sets and
// filters the same names). Refused at submission so that a spec says at once
// what it cannot do, rather than having the worker drop it silently.
bool IsIsolationVariable(const std::string& name) {
  static const std::set<std::string> kReserved = {"LD_PRELOAD",
                                                  "LD_LIBRARY_PATH",
                                                  "LD_AUDIT",
                                                  "GPU_CORE_UTILIZATION_POLICY",
                                                  "CUDA_DEVICE_MEMORY_SHARED_CACHE",
                                                  "CUDA_DISABLE_CONTROL",
                                                  "CUDA_OVERSUBSCRIBE"};
  if (kReserved.count(name) > 0) return true;
  // HAMi-core reads per-device forms too (CUDA_DEVICE_SM_LIMIT_0).
  return name.rfind("CUDA_DEVICE_MEMORY_LIMIT", 0) == 0 || name.rfind("CUDA_DEVICE_SM_LIMIT", 0) == 0;
}

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

Status ValidateLabelValue(const std::string& key, const std::string& value) {
  if (value.size() > 63 || !AllOf(value, "._-")) {
    return Status::InvalidArgument("label " + key + ": value '" + value.substr(0, 64) +
                                   "' must be at most 63 letters, digits, '.', '_' and '-'");
  }
  return Status::Ok();
}

Status ValidateLabelMap(const std::string& field, const std::map<std::string, std::string>& labels) {
  constexpr size_t kMaxLabels = 64;
  if (labels.size() > kMaxLabels) {
    return Status::InvalidArgument(field + ": more than " + std::to_string(kMaxLabels) + " entries");
  }
  for (const auto& [key, value] : labels) {
    Status status = ValidateLabelKey(key);
    if (status.ok()) status = ValidateLabelValue(key, value);
    if (!status.ok()) return Status::InvalidArgument(field + ": " + status.message());
  }
  return Status::Ok();
}

Status ValidateModelName(const std::string& field, const std::string& model) {
  if (model.size() > 63 || !AllOf(model, "._-")) {
    return Status::InvalidArgument(field + ": '" + model.substr(0, 64) +
                                   "' must be at most 63 letters, digits, '.', '_' and '-'");
  }
  return Status::Ok();
}

// A gpu_model request: one model, or several separated by '|' (any of them).
Status ValidateModelList(const std::string& field, const std::string& models) {
  if (models.size() > 255) return Status::InvalidArgument(field + ": longer than 255 characters");
  if (models.empty()) return Status::Ok();
  size_t start = 0;
  while (true) {
    const size_t bar = models.find('|', start);
    const std::string model = models.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    if (model.empty()) return Status::InvalidArgument(field + ": '" + models + "' has an empty model between '|'");
    GPOOL_RETURN_IF_ERROR(ValidateModelName(field, model));
    if (bar == std::string::npos) return Status::Ok();
    start = bar + 1;
  }
}

constexpr size_t kMaxUuidList = 1024;

// A MIG profile name: "<n>g.<m>gb" with an optional "+me"-style suffix.
bool IsMigProfileName(std::string_view name) {
  if (name == "auto") return true;
  if (name.empty() || name.size() > 32) return false;
  const auto g = name.find("g.");
  if (g == 0 || g == std::string_view::npos) return false;
  for (char c : name.substr(0, g)) {
    if (c < '0' || c > '9') return false;
  }
  return name.find("gb", g) != std::string_view::npos;
}

// Shares, MIG and core requests: one kind per task, amounts in range.
Status ValidateDeviceShare(const std::string& prefix, const Resources& res) {
  if (res.gpu_memory_pct > 100) {
    return Status::InvalidArgument(prefix + ".gpu_memory_pct: " + std::to_string(res.gpu_memory_pct) +
                                   " is not 1 to 100");
  }
  if (res.gpu_compute_pct > 100) {
    return Status::InvalidArgument(prefix + ".gpu_compute_pct: " + std::to_string(res.gpu_compute_pct) +
                                   " is not 1 to 100");
  }
  if (res.gpu_memory_mib > 0 && res.gpu_memory_pct > 0) {
    return Status::InvalidArgument(prefix + ": gpu_memory_mib and gpu_memory_pct are alternatives; set one");
  }
  if (res.gpu_memory_mib > (16ull << 20)) {
    return Status::InvalidArgument(prefix + ".gpu_memory_mib: more than any device has (16 TiB)");
  }
  if (!res.sharing_qos.empty() && !SharingQosFromString(res.sharing_qos)) {
    return NotOneOf<SharingQos>(prefix + ".sharing_qos", res.sharing_qos);
  }
  const bool wants_device = res.gpu_memory_mib > 0 || res.gpu_memory_pct > 0 || res.gpu_compute_pct > 0 ||
                            !res.mig_profile.empty();
  if (wants_device && res.gpus == 0 && res.cores == 0) {
    return Status::InvalidArgument(prefix + ": a GPU share or MIG profile needs gpus of at least 1");
  }
  if (!res.sharing_qos.empty() && !res.Shared()) {
    return Status::InvalidArgument(prefix + ".sharing_qos: set, but the task asks for no GPU share "
                                   "(set gpu_memory_mib, gpu_memory_pct or gpu_compute_pct)");
  }
  if (!res.mig_profile.empty()) {
    if (!IsMigProfileName(res.mig_profile)) {
      return Status::InvalidArgument(prefix + ".mig_profile: '" + res.mig_profile.substr(0, 32) +
                                     "' is not a MIG profile (like 1g.10gb) or auto");
    }
    if (res.mig_profile == "auto" && res.gpu_memory_mib == 0 && res.gpu_memory_pct == 0 && res.gpu_compute_pct == 0) {
      return Status::InvalidArgument(prefix + ".mig_profile: auto needs gpu_memory_mib, gpu_memory_pct or "
                                     "gpu_compute_pct to choose a profile");
    }
    if (res.mig_profile != "auto" && (res.gpu_memory_mib > 0 || res.gpu_memory_pct > 0 || res.gpu_compute_pct > 0)) {
      return Status::InvalidArgument(prefix + ".mig_profile: a named profile fixes memory and compute; "
                                     "drop gpu_memory_*/gpu_compute_pct or use auto");
    }
    if (res.gpus != 1) {
      return Status::InvalidArgument(prefix + ".mig_profile: a task gets one MIG instance; set gpus to 1");
    }
  }
  if (res.cores > 0) {
    if (res.gpus > 0) return Status::InvalidArgument(prefix + ".cores: core-level requests replace gpus; set one");
    if (wants_device) {
      return Status::InvalidArgument(prefix + ".cores: cannot be combined with GPU shares or MIG");
    }
    if (res.cores > 1024) return Status::InvalidArgument(prefix + ".cores: more than 1024");
  }
  return Status::Ok();
}

}  // namespace



Status CheckJobSpecSize(const JobSpec& spec, uint64_t max_bytes) {
  const size_t bytes = wire::PackToString(spec).size();
  if (bytes <= max_bytes) return Status::Ok();
  return Status::ResourceExhausted(std::to_string(bytes) + " bytes encoded, over the limit of " +
                                   std::to_string(max_bytes) + " bytes (the coordinator's --max-spec-bytes)");
}

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
      if (IsIsolationVariable(key)) {
        return Status::InvalidArgument(prefix + ".env: " + key +
                                       " is set by the worker to isolate tasks and cannot be set by a job");
      }
    }
    if (group.min_replicas > group.replicas) {
      return Status::InvalidArgument(prefix + ".min_replicas: " + std::to_string(group.min_replicas) +
                                     " is more than its " + std::to_string(group.replicas) + " replicas");
    }
    GPOOL_RETURN_IF_ERROR(ValidateScaleSpec(prefix, group.scale, group.MinReplicas(), group.replicas));
    for (size_t r = 0; r < group.scale.rules.size(); ++r) {
      const std::string& queue = group.scale.rules[r].queue;
      if (queue.empty()) continue;
      GPOOL_RETURN_IF_ERROR(
          ValidateName(prefix + ".scale.rules[" + std::to_string(r) + "].queue", queue, limits.max_name_length));
    }
    const auto& res = group.resources;
    GPOOL_RETURN_IF_ERROR(ValidateModelList(prefix + ".resources.gpu_model", res.gpu_model));
    if (!res.gpu_model.empty() && res.gpus == 0) {
      return Status::InvalidArgument(prefix + ".resources.gpu_model: set, but the task asks for no GPUs");
    }
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
    GPOOL_RETURN_IF_ERROR(ValidateDeviceShare(prefix + ".resources", res));
    if (res.exclusive_cores && (res.cpu_milli == 0 || res.cpu_milli % 1000 != 0)) {
      // Cores are handed out whole: a fraction of one cannot be exclusive.
      return Status::InvalidArgument(prefix + ".resources.exclusive_cores: needs a whole number of cpus (cpu_milli " +
                                     std::to_string(res.cpu_milli) + " is not a positive multiple of 1000)");
    }
  }
  if (!PriorityClassFromString(spec.priority_class)) {
    return NotOneOf<PriorityClass>("priority_class", spec.priority_class);
  }
  if (!spec.pool.empty() && !NodePoolFromString(spec.pool)) return NotOneOf<NodePool>("pool", spec.pool);
  if (!RestartPolicyFromString(spec.restart.policy)) {
    return NotOneOf<RestartPolicy>("restart.policy", spec.restart.policy);
  }
  // More requeues than this is a job that fails the same way every time.
  constexpr uint32_t kMaxRestartAttempts = 100;
  if (spec.restart.max_attempts > kMaxRestartAttempts) {
    return Status::InvalidArgument("restart.max_attempts: at most " + std::to_string(kMaxRestartAttempts) + ", not " +
                                   std::to_string(spec.restart.max_attempts));
  }
  if (!spec.user.empty()) GPOOL_RETURN_IF_ERROR(ValidateName("user", spec.user, limits.max_name_length));
  if (!NumaPolicyFromString(spec.numa_policy)) return NotOneOf<NumaPolicy>("numa_policy", spec.numa_policy);
  if (!NetworkModeFromString(spec.network_mode)) return NotOneOf<NetworkMode>("network_mode", spec.network_mode);
  if (!PlacementPolicyFromString(spec.node_policy)) {
    return NotOneOf<PlacementPolicy>("node_policy", spec.node_policy);
  }
  if (!PlacementPolicyFromString(spec.gpu_policy)) return NotOneOf<PlacementPolicy>("gpu_policy", spec.gpu_policy);
  constexpr uint32_t kMaxTier = 8;
  if (spec.network_tier < 1 || spec.network_tier > kMaxTier) {
    return Status::InvalidArgument("network_tier: " + std::to_string(spec.network_tier) + " is not 1 to " +
                                   std::to_string(kMaxTier));
  }
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const uint32_t tier = spec.tasks[i].network_tier;
    if (tier > spec.network_tier || (tier != 0 && spec.network_mode == "none")) {
      return Status::InvalidArgument("tasks[" + std::to_string(i) + "].network_tier: " + std::to_string(tier) +
                                     (spec.network_mode == "none" ? " needs a job network_mode"
                                                                  : " is above the job's network_tier " +
                                                                        std::to_string(spec.network_tier)));
    }
  }
  if (spec.grace_period_ms > limits.max_grace_period_ms) {
    return Status::InvalidArgument("grace_period_ms: " + std::to_string(spec.grace_period_ms) +
                                   " is over the coordinator's maximum of " +
                                   std::to_string(limits.max_grace_period_ms) + " (--max-grace-period-ms)");
  }
  // A year is past any sensible limit and keeps start + limit far from overflow.
  constexpr uint64_t kMaxRuntimeMs = 366ull * 24 * 3'600'000;
  if (spec.max_runtime_ms > kMaxRuntimeMs) {
    return Status::InvalidArgument("max_runtime_ms: " + std::to_string(spec.max_runtime_ms) +
                                   " is over a year; use 0 for no limit");
  }
  GPOOL_RETURN_IF_ERROR(ValidateLabelMap("node_selector", spec.node_selector));
  GPOOL_RETURN_IF_ERROR(ValidateLabelMap("prefer_labels", spec.prefer_labels));
  if (spec.tolerations.size() > 64) return Status::InvalidArgument("tolerations: more than 64 entries");
  for (const auto& toleration : spec.tolerations) {
    const auto eq = toleration.find('=');
    const std::string key = toleration.substr(0, eq);
    Status status = ValidateLabelKey(key);
    if (status.ok() && eq != std::string::npos) status = ValidateLabelValue(key, toleration.substr(eq + 1));
    if (!status.ok()) return Status::InvalidArgument("tolerations: " + status.message());
  }
  for (const auto* list : {&spec.gpu_uuid_allow, &spec.gpu_uuid_deny}) {
    const char* field = list == &spec.gpu_uuid_allow ? "gpu_uuid_allow" : "gpu_uuid_deny";
    if (list->size() > kMaxUuidList) {
      return Status::InvalidArgument(std::string(field) + ": more than " + std::to_string(kMaxUuidList) + " UUIDs");
    }
    for (const auto& uuid : *list) {
      if (uuid.empty() || uuid.size() > 128) {
        return Status::InvalidArgument(std::string(field) + ": a UUID must have 1 to 128 characters");
      }
    }
  }
  if (total > limits.max_tasks_per_job) {
    return Status::InvalidArgument("tasks: " + std::to_string(total) + " replicas in all exceeds the maximum of " +
                                   std::to_string(limits.max_tasks_per_job) + " per job");
  }
  return ValidateSessionSpec(spec);
}

// A pool, and the queue owning it: only an exclusive node belongs to a queue.
Status ValidatePoolOwner(const std::string& field, const std::string& pool, const std::string& queue,
                         bool pool_optional) {
  if (!(pool_optional && pool.empty()) && !NodePoolFromString(pool)) return NotOneOf<NodePool>(field, pool);
  if (queue.empty()) return Status::Ok();
  if (pool != "exclusive") {
    return Status::InvalidArgument(field + ": only an exclusive node belongs to a queue (queue '" +
                                   queue.substr(0, 128) + "' given for pool '" + pool.substr(0, 32) + "')");
  }
  return ValidateName("queue", queue, 128);
}

bool IsIpAddress(const std::string& text) {
  unsigned char buffer[sizeof(in6_addr)];
  return inet_pton(AF_INET, text.c_str(), buffer) == 1 || inet_pton(AF_INET6, text.c_str(), buffer) == 1;
}

Status ValidateNodeSpec(const NodeSpec& spec) {
  // Far above any real node; bounds what one registration can make us store.
  constexpr size_t kMaxDevices = 1024;
  constexpr size_t kMaxLabels = 256;
  GPOOL_RETURN_IF_ERROR(ValidateName("node.name", spec.name, kMaxNodeNameLength));
  GPOOL_RETURN_IF_ERROR(ValidatePoolOwner("node.pool", spec.pool, spec.pool_queue, /*pool_optional=*/true));
  if (!spec.address.empty() && !IsIpAddress(spec.address)) {
    return Status::InvalidArgument("node.address: '" + spec.address.substr(0, 64) +
                                   "' is not an IPv4 or IPv6 address");
  }
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
    if (gpu.mig_mode != "" && gpu.mig_mode != "static" && gpu.mig_mode != "dynamic") {
      return Status::InvalidArgument(prefix + ".mig_mode: '" + gpu.mig_mode.substr(0, 32) +
                                     "' is not static or dynamic");
    }
    if (gpu.mig_mode != "static" && !gpu.mig_instances.empty()) {
      return Status::InvalidArgument(prefix + ".mig_instances: listed, but mig_mode is not static");
    }
    if (gpu.mig_instances.size() > 16) return Status::InvalidArgument(prefix + ".mig_instances: more than 16");
    for (const auto& instance : gpu.mig_instances) {
      if (!IsMigProfileName(instance.profile) || instance.profile == "auto") {
        return Status::InvalidArgument(prefix + ".mig_instances: '" + instance.profile.substr(0, 32) +
                                       "' is not a MIG profile");
      }
    }
    if (gpu.cores > 256) return Status::InvalidArgument(prefix + ".cores: more than 256");
    if (gpu.time_slices > 64) return Status::InvalidArgument(prefix + ".time_slices: more than 64");
    if (gpu.time_slices >= 2 && (!gpu.mig_mode.empty() || gpu.cores > 0)) {
      // A replica is the whole device taken in turns; MIG or core slices of it could not be.
      return Status::InvalidArgument(prefix + ".time_slices: cannot be combined with MIG or cores");
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


Status ValidateUpdateNode(const UpdateNode& update) {
  constexpr size_t kMaxLabelChanges = 256;
  GPOOL_RETURN_IF_ERROR(ValidateName("node", update.node, kMaxNodeNameLength));
  // A grace keeps an old key admitted; for a month at most, so a typo does not
  // leave a retired key working for years.
  constexpr uint64_t kMaxKeyGraceMs = 30ull * 24 * 3600 * 1000;
  if (update.grace_ms != 0 && update.op != NodeUpdateOp::kWorkerKey) {
    return Status::InvalidArgument("grace_ms: only a worker-key update has a grace");
  }
  // The op is one NodeUpdateOp names: decoding refused any other.
  if (update.op == NodeUpdateOp::kCordon || update.op == NodeUpdateOp::kUncordon) return Status::Ok();
  if (update.op == NodeUpdateOp::kWorkerKey) {
    // Z85: 40 characters of its alphabet encode the 32-byte key.
    static constexpr std::string_view kZ85 =
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
    if (update.key.size() != 40 || update.key.find_first_not_of(kZ85) != std::string::npos) {
      return Status::InvalidArgument("key: not a 40-character Z85 public key");
    }
    if (update.grace_ms > kMaxKeyGraceMs) {
      return Status::InvalidArgument("grace_ms: at most 30 days (" + std::to_string(kMaxKeyGraceMs) + " ms)");
    }
    return Status::Ok();
  }
  if (update.op == NodeUpdateOp::kPool) return ValidatePoolOwner("pool", update.pool, update.queue, /*pool_optional=*/false);
  if (update.op == NodeUpdateOp::kTaint) {
    if (update.taints.empty() && update.remove_taints.empty()) {
      return Status::InvalidArgument("taints: nothing to set or remove");
    }
    if (update.taints.size() + update.remove_taints.size() > kMaxLabelChanges) {
      return Status::InvalidArgument("taints: more than " + std::to_string(kMaxLabelChanges) + " changes at once");
    }
    GPOOL_RETURN_IF_ERROR(ValidateLabelMap("taints", update.taints));
    for (const auto& key : update.remove_taints) {
      GPOOL_RETURN_IF_ERROR(ValidateLabelKey(key));
      if (update.taints.count(key)) return Status::InvalidArgument("taint " + key + ": both set and removed");
    }
    return Status::Ok();
  }
  // What is left is label.
  if (update.labels.empty() && update.remove_labels.empty()) {
    return Status::InvalidArgument("labels: nothing to set or remove");
  }
  if (update.labels.size() + update.remove_labels.size() > kMaxLabelChanges) {
    return Status::InvalidArgument("labels: more than " + std::to_string(kMaxLabelChanges) + " changes at once");
  }
  for (const auto& [key, value] : update.labels) {
    GPOOL_RETURN_IF_ERROR(ValidateLabelKey(key));
    GPOOL_RETURN_IF_ERROR(ValidateLabelValue(key, value));
  }
  for (const auto& key : update.remove_labels) {
    GPOOL_RETURN_IF_ERROR(ValidateLabelKey(key));
    if (update.labels.count(key)) return Status::InvalidArgument("label " + key + ": both set and removed");
  }
  return Status::Ok();
}

}  // namespace gpool

namespace gpool {

bool IsQuotaResource(std::string_view name) {
  if (name == "gpu" || name == "cpu" || name == "memory" || name == "gpu_memory") return true;
  if (name.rfind("gpu/", 0) != 0 || name.size() == 4 || name.size() > 4 + 63) return false;
  return AllOf(name.substr(4), "._-");
}

namespace {

Status ValidateQuota(const std::string& field, const Quota& quota) {
  if (quota.size() > 64) return Status::InvalidArgument(field + ": more than 64 resources");
  for (const auto& [name, amount] : quota) {
    if (!IsQuotaResource(name)) {
      return Status::InvalidArgument(field + ": unknown resource '" + name.substr(0, 64) +
                                     "' (expected gpu, cpu, memory, gpu_memory or gpu/<model>)");
    }
  }
  return Status::Ok();
}

// `lower` must not exceed `upper` for a resource both name.
Status CheckOrdered(const Quota& lower, const char* lower_name, const Quota& upper, const char* upper_name) {
  for (const auto& [name, amount] : lower) {
    auto it = upper.find(name);
    if (it != upper.end() && amount > it->second) {
      return Status::InvalidArgument(std::string(lower_name) + " " + name + "=" + std::to_string(amount) +
                                     " is more than " + upper_name + " " + std::to_string(it->second));
    }
  }
  return Status::Ok();
}

// Only classes that may preempt at all (class_rules.h) may be listed: a
// queue's policy narrows the class rule, it never widens it.
Status ValidatePreemptingClasses(const std::vector<std::string>& classes) {
  for (size_t i = 0; i < classes.size(); ++i) {
    const auto cls = PriorityClassFromString(classes[i]);
    if (!cls) return NotOneOf<PriorityClass>("preempting_classes", classes[i]);
    if (*cls != PriorityClass::kHigh && *cls != PriorityClass::kSystem) {
      return Status::InvalidArgument("preempting_classes: '" + classes[i] +
                                     "' work never preempts (only high and system may; medium takes no part in "
                                     "preemption and low is what preemption takes)");
    }
    if (std::find(classes.begin(), classes.begin() + static_cast<std::ptrdiff_t>(i), classes[i]) !=
        classes.begin() + static_cast<std::ptrdiff_t>(i)) {
      return Status::InvalidArgument("preempting_classes: '" + classes[i] + "' is listed twice");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateQueueSpec(const QueueSpec& spec) {
  GPOOL_RETURN_IF_ERROR(ValidateName("queue", spec.name, 128));
  if (spec.name == "root") {
    if (!spec.parent.empty() && spec.parent != "root") return Status::InvalidArgument("parent: root has no parent");
  } else {
    GPOOL_RETURN_IF_ERROR(ValidateName("parent", spec.parent, 128));
    if (spec.parent == spec.name) return Status::InvalidArgument("parent: a queue cannot be its own parent");
  }
  GPOOL_RETURN_IF_ERROR(ValidateQuota("capability", spec.capability));
  GPOOL_RETURN_IF_ERROR(ValidateQuota("deserved", spec.deserved));
  GPOOL_RETURN_IF_ERROR(ValidateQuota("guarantee", spec.guarantee));
  GPOOL_RETURN_IF_ERROR(CheckOrdered(spec.guarantee, "guarantee", spec.deserved, "deserved"));
  GPOOL_RETURN_IF_ERROR(CheckOrdered(spec.deserved, "deserved", spec.capability, "capability"));
  GPOOL_RETURN_IF_ERROR(CheckOrdered(spec.guarantee, "guarantee", spec.capability, "capability"));
  if (spec.pools.size() > kNodePoolCount) return Status::InvalidArgument("pools: more entries than there are pools");
  for (size_t i = 0; i < spec.pools.size(); ++i) {
    if (!NodePoolFromString(spec.pools[i])) return NotOneOf<NodePool>("pools", spec.pools[i]);
    if (std::find(spec.pools.begin(), spec.pools.begin() + static_cast<std::ptrdiff_t>(i), spec.pools[i]) !=
        spec.pools.begin() + static_cast<std::ptrdiff_t>(i)) {
      return Status::InvalidArgument("pools: '" + spec.pools[i] + "' is listed twice");
    }
  }
  return ValidatePreemptingClasses(spec.preempting_classes);
}

Status ValidateUpdateQueue(const UpdateQueue& update) {
  // The op is one QueueOp names: decoding refused any other.
  if (update.op == QueueOp::kGrantClass || update.op == QueueOp::kRevokeClass) {
    GPOOL_RETURN_IF_ERROR(ValidateName("queue", update.spec.name, 128));
    const auto priority_class = PriorityClassFromString(update.priority_class);
    if (!priority_class) return NotOneOf<PriorityClass>("class", update.priority_class);
    if (*priority_class < PriorityClass::kHigh) {
      return Status::InvalidArgument("class: " + update.priority_class +
                                     " is open to every queue; only high and system are granted per queue");
    }
    return Status::Ok();
  }
  if (!update.priority_class.empty()) {
    return Status::InvalidArgument("class: only grant-class and revoke-class take a class");
  }
  if (!update.keep.empty() && update.op != QueueOp::kUpdate) {
    return Status::InvalidArgument("keep: only an update keeps fields of a queue");
  }
  const auto& keepable = QueueSpecOptionalKeys();
  for (const std::string& key : update.keep) {
    if (std::find(keepable.begin(), keepable.end(), key) == keepable.end()) {
      std::string names;
      for (const std::string& name : keepable) names += (names.empty() ? "" : ", ") + name;
      return Status::InvalidArgument("keep: '" + key + "' is not a field of a queue spec (one of " + names + ")");
    }
  }
  if (update.op == QueueOp::kDelete) {
    GPOOL_RETURN_IF_ERROR(ValidateName("queue", update.spec.name, 128));
    if (update.spec.name == "root" || update.spec.name == "default") {
      return Status::FailedPrecondition("queue " + update.spec.name + " always exists and cannot be deleted");
    }
    return Status::Ok();
  }
  if (update.op == QueueOp::kCreate && (update.spec.name == "root" || update.spec.name == "default")) {
    return Status::AlreadyExists("queue " + update.spec.name + " always exists");
  }
  return ValidateQueueSpec(update.spec);
}

}  // namespace gpool
