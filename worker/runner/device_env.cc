#include "worker/runner/device_env.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <type_traits>

#include "protocol/messages_worker.h"
#include "topology/cpulist.h"
#include "worker/runner/simulated_mig_manager.h"
#include "worker/runner/vendor_env.h"

namespace gpool::worker {
namespace {

// Variables HAMi-core reads. Whenever a task is a share they are the
// worker's alone: the prefixes also cover the per-device forms
// (CUDA_DEVICE_SM_LIMIT_0 beats CUDA_DEVICE_SM_LIMIT in HAMi-core), and
// CUDA_DISABLE_CONTROL / CUDA_OVERSUBSCRIBE would switch enforcement off.
constexpr std::string_view kShareKeyPrefixes[] = {"CUDA_DEVICE_MEMORY_LIMIT", "CUDA_DEVICE_SM_LIMIT"};
// GPOOL_CUDA_ACTIVITY: the interposer's node-wide activity file for
// burst-share; a task pointing it elsewhere would never see its neighbours
// and burst unthrottled. LD_AUDIT: an auditor library sees every symbol
// binding (la_symbind) and could bind cuMemAlloc past the preloaded
// interposer to the real driver.
constexpr std::string_view kShareKeys[] = {"GPU_CORE_UTILIZATION_POLICY", "CUDA_DEVICE_MEMORY_SHARED_CACHE",
                                           "CUDA_DISABLE_CONTROL", "CUDA_OVERSUBSCRIBE", "GPOOL_CUDA_ACTIVITY",
                                           "LD_AUDIT"};
// Always the worker's, set or not: a task must not claim a share, a MIG
// instance or cores it was not given (NEURON_RT_VISIBLE_CORES would let it
// take cores that other tasks hold).
constexpr std::string_view kWorkerKeys[] = {
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "GPOOL_GPU_UUIDS", "GPOOL_GPU_MEMORY_MIB",
    "GPOOL_GPU_COMPUTE_PCT", "GPOOL_SHARING_QOS", "GPOOL_MIG_PROFILES", "GPOOL_CORES", "NEURON_RT_VISIBLE_CORES",
    "GPOOL_CUDA_REAL_DRIVER", "GPOOL_CUDA_LEDGER", "GPOOL_CUDA_OBJECT_COSTS"};

bool WorkerOwns(const std::string& key, bool share) {
  for (std::string_view k : kWorkerKeys) {
    if (key == k) return true;
  }
  if (IsVendorDeviceVariable(key)) return true;
  if (!share) return false;
  for (std::string_view k : kShareKeys) {
    if (key == k) return true;
  }
  for (std::string_view prefix : kShareKeyPrefixes) {
    if (key.rfind(prefix, 0) == 0) return true;
  }
  return false;
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

bool HasMig(const BindTask& bind) {
  return std::any_of(bind.mig_profiles.begin(), bind.mig_profiles.end(),
                     [](const std::string& p) { return !p.empty(); });
}

std::string DescribeInstances(const GpuInfo& gpu) {
  std::string out;
  for (const auto& m : gpu.mig_instances) {
    out += (out.empty() ? "" : ", ") + m.profile + "@" + std::to_string(m.start);
  }
  return out.empty() ? "none" : out;
}

Result<std::string> MigInstanceId(const GpuInfo& gpu, const std::string& profile, uint32_t start,
                                  const std::map<uint32_t, std::string>& mig_uuids) {
  const std::string instance = "MIG instance " + profile + " at start " + std::to_string(start);
  const std::string where = "GPU " + std::to_string(gpu.index) + " (" + gpu.uuid + ")";
  if (gpu.mig_mode == "dynamic") {
    auto created = mig_uuids.find(gpu.index);
    return created != mig_uuids.end() ? created->second : SimulatedMigUuid(gpu.uuid, profile, start);
  }
  if (gpu.mig_mode != "static") {
    return Status::FailedPrecondition(where + " has MIG off, but the task was placed on its " + instance);
  }
  for (const auto& m : gpu.mig_instances) {
    if (m.profile == profile && m.start == start && !m.uuid.empty()) return m.uuid;
  }
  return Status::FailedPrecondition(where + " has no " + instance + " (it has " + DescribeInstances(gpu) +
                                    "); its MIG layout changed since the task was placed");
}

// LD_PRELOAD with `lib` first, keeping the task's own preloads after it.
std::string Preload(const std::string& lib, const std::string& existing) {
  size_t start = 0;
  while (start < existing.size()) {
    size_t end = existing.find_first_of(": \t", start);
    if (end == std::string::npos) end = existing.size();
    if (existing.compare(start, end - start, lib) == 0 && end - start == lib.size()) return existing;
    start = end + 1;
  }
  return existing.empty() ? lib : lib + ":" + existing;
}

// LD_LIBRARY_PATH with `dir` first and the task's own entries after it;
// another copy of `dir` is dropped, and so are empty entries (the dynamic
// linker reads one as the current directory, which the task controls).
std::string LibraryPathFirst(const std::string& dir, const std::string& existing) {
  std::string out = dir;
  size_t start = 0;
  while (start <= existing.size()) {
    size_t end = existing.find(':', start);
    if (end == std::string::npos) end = existing.size();
    const std::string entry = existing.substr(start, end - start);
    if (!entry.empty() && entry != dir) out += ":" + entry;
    start = end + 1;
  }
  return out;
}

void AddInterposerEnv(const TaskEnvOptions& options, std::map<std::string, std::string>& env) {
  auto it = env.find("LD_LIBRARY_PATH");
  env["LD_LIBRARY_PATH"] = LibraryPathFirst(options.cuda_lib_dir, it == env.end() ? "" : it->second);
  if (!options.cuda_real_driver.empty()) env["GPOOL_CUDA_REAL_DRIVER"] = options.cuda_real_driver;
  if (!options.cuda_ledger.empty()) env["GPOOL_CUDA_LEDGER"] = options.cuda_ledger;
  if (!options.cuda_activity_dir.empty()) env["GPOOL_CUDA_ACTIVITY"] = options.cuda_activity_dir;
  // Always set: a task must not choose what its objects cost its share.
  env["GPOOL_CUDA_OBJECT_COSTS"] = options.cuda_object_costs.empty() ? "none" : options.cuda_object_costs;
}

void AddShareEnv(const BindTask& bind, size_t devices, const TaskEnvOptions& options,
                 std::map<std::string, std::string>& env) {
  // Validated before the task starts (task_env.cc); an unknown name is best-effort.
  const SharingQos qos = SharingQosFromString(EffectiveSharingQos(bind)).value_or(SharingQos::kBestEffort);
  if (bind.gpu_memory_mib > 0) {
    const std::string limit = std::to_string(bind.gpu_memory_mib) + "m";  // HAMi-core: m = MiB
    env["CUDA_DEVICE_MEMORY_LIMIT"] = limit;
    for (size_t i = 0; i < devices; ++i) env["CUDA_DEVICE_MEMORY_LIMIT_" + std::to_string(i)] = limit;
  }
  if (bind.gpu_compute_pct > 0 && qos != SharingQos::kBestEffort) {
    env["CUDA_DEVICE_SM_LIMIT"] = std::to_string(bind.gpu_compute_pct);
  }
  env["GPU_CORE_UTILIZATION_POLICY"] = qos == SharingQos::kFixedShare   ? "force"
                                       : qos == SharingQos::kBurstShare ? "default"
                                                                        : "disable";
  if (!options.share_cache_path.empty()) env["CUDA_DEVICE_MEMORY_SHARED_CACHE"] = options.share_cache_path;
  if (!options.cuda_intercept_lib.empty()) {
    auto it = env.find("LD_PRELOAD");
    env["LD_PRELOAD"] = Preload(options.cuda_intercept_lib, it == env.end() ? "" : it->second);
  } else if (!options.cuda_lib_dir.empty()) {
    AddInterposerEnv(options, env);
  }
  env["GPOOL_GPU_MEMORY_MIB"] = std::to_string(bind.gpu_memory_mib);
  env["GPOOL_GPU_COMPUTE_PCT"] = std::to_string(bind.gpu_compute_pct);
  env["GPOOL_SHARING_QOS"] = std::string(ToString(qos));
}

}  // namespace

std::string EffectiveSharingQos(const BindTask& bind) {
  return bind.sharing_qos.empty() ? std::string(ToString(SharingQos::kBestEffort)) : bind.sharing_qos;
}

bool IsGpuShare(const BindTask& bind) { return bind.gpu_memory_mib > 0 || bind.gpu_compute_pct > 0; }

std::vector<std::string> BoundGpuUuids(const BindTask& bind, const NodeSpec& node) {
  std::vector<std::string> uuids;
  for (uint32_t index : bind.gpu_indices) {
    const GpuInfo* gpu = FindGpu(node, index);
    uuids.push_back(gpu != nullptr ? gpu->uuid : std::string());
  }
  return uuids;
}

Result<std::vector<std::string>> VisibleDeviceIds(const BindTask& bind, const NodeSpec& node,
                                                  const std::map<uint32_t, std::string>& mig_uuids) {
  std::vector<std::string> ids;
  for (size_t i = 0; i < bind.gpu_indices.size(); ++i) {
    const GpuInfo* gpu = FindGpu(node, bind.gpu_indices[i]);
    if (gpu == nullptr) {
      return Status::InvalidArgument("gpu_indices[" + std::to_string(i) + "]: GPU " +
                                     std::to_string(bind.gpu_indices[i]) + " does not exist");
    }
    const std::string profile = i < bind.mig_profiles.size() ? bind.mig_profiles[i] : "";
    if (profile.empty()) {
      ids.push_back(gpu->uuid);
      continue;
    }
    const uint32_t start = i < bind.mig_starts.size() ? bind.mig_starts[i] : 0;
    auto id = MigInstanceId(*gpu, profile, start, mig_uuids);
    if (!id.ok()) return id.status();
    ids.push_back(std::move(*id));
  }
  return ids;
}

std::vector<uint32_t> VisibleCores(const BindTask& bind, const NodeSpec& node) {
  std::vector<uint32_t> cores(bind.cores.begin(), bind.cores.end());
  if (cores.empty()) {
    std::vector<const GpuInfo*> by_index;
    for (const auto& gpu : node.gpus) by_index.push_back(&gpu);
    std::sort(by_index.begin(), by_index.end(), [](const GpuInfo* a, const GpuInfo* b) { return a->index < b->index; });
    const std::set<uint32_t> bound(bind.gpu_indices.begin(), bind.gpu_indices.end());
    uint32_t first = 0;
    for (const GpuInfo* gpu : by_index) {
      if (bound.count(gpu->index)) {
        for (uint32_t c = 0; c < gpu->cores; ++c) cores.push_back(first + c);
      }
      first += gpu->cores;
    }
  }
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  return cores;
}

Status AddDeviceEnv(const BindTask& bind, const NodeSpec& node, const TaskEnvOptions& options,
                    std::map<std::string, std::string>& env) {
  const bool share = IsGpuShare(bind);
  std::erase_if(env, [share](const auto& entry) { return WorkerOwns(entry.first, share); });
  GPOOL_ASSIGN_OR_RETURN(std::vector<std::string> ids, VisibleDeviceIds(bind, node, options.mig_uuids));

  const std::string indices = Join(bind.gpu_indices);
  const bool mig = HasMig(bind);
  env["CUDA_VISIBLE_DEVICES"] = mig ? Join(ids) : indices;
  env["NVIDIA_VISIBLE_DEVICES"] = ids.empty() ? "void" : Join(ids);
  GPOOL_RETURN_IF_ERROR(AddVendorDeviceEnv(bind, node, env));
  env["GPOOL_GPU_UUIDS"] = Join(BoundGpuUuids(bind, node));
  if (mig) env["GPOOL_MIG_PROFILES"] = Join(bind.mig_profiles);
  if (share) AddShareEnv(bind, ids.size(), options, env);
  const std::vector<uint32_t> cores = VisibleCores(bind, node);
  if (!cores.empty()) {
    env["NEURON_RT_VISIBLE_CORES"] = topology::FormatCpuList(cores);
    env["GPOOL_CORES"] = Join(cores);
  }
  return Status::Ok();
}

}  // namespace gpool::worker
