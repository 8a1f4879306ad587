#include "worker/discovery/nvml_mig_manager.h"

#include <cstring>
#include <utility>
#include <vector>

namespace gpool::worker {
namespace {

std::string Where(uint32_t gpu_index) { return "GPU " + std::to_string(gpu_index); }

std::string Instance(const std::string& profile, uint32_t start) {
  return "MIG instance " + profile + " at start " + std::to_string(start);
}

}  // namespace

NvmlMigManager::NvmlMigManager(std::unique_ptr<NvmlLibrary> lib) : lib_(std::move(lib)) {
  const NvmlLibrary& l = *lib_;
  mig_ = l.ResolveMigApi();
  control_.create_gpu_instance = l.Symbol<nvml::CreateGpuInstanceFn>("nvmlDeviceCreateGpuInstanceWithPlacement");
  control_.get_placements = l.Symbol<nvml::GetPlacementsFn>("nvmlDeviceGetGpuInstancePossiblePlacements_v2");
  if (control_.get_placements == nullptr) {
    control_.get_placements = l.Symbol<nvml::GetPlacementsFn>("nvmlDeviceGetGpuInstancePossiblePlacements");
  }
  control_.get_gpu_instances = l.Symbol<nvml::GetGpuInstancesFn>("nvmlDeviceGetGpuInstances");
  control_.get_ci_profile_info =
      l.Symbol<nvml::GetCiProfileInfoFn>("nvmlGpuInstanceGetComputeInstanceProfileInfo");
  control_.create_compute_instance =
      l.Symbol<nvml::CreateComputeInstanceFn>("nvmlGpuInstanceCreateComputeInstance");
  control_.get_compute_instances = l.Symbol<nvml::GetComputeInstancesFn>("nvmlGpuInstanceGetComputeInstances");
  control_.destroy_compute_instance = l.Symbol<nvml::DestroyComputeInstanceFn>("nvmlComputeInstanceDestroy");
  control_.destroy_gpu_instance = l.Symbol<nvml::DestroyGpuInstanceFn>("nvmlGpuInstanceDestroy");
}

Result<std::unique_ptr<NvmlMigManager>> NvmlMigManager::Open(const std::string& library) {
  GPOOL_ASSIGN_OR_RETURN(std::unique_ptr<NvmlLibrary> lib, NvmlLibrary::Open(library));
  return std::unique_ptr<NvmlMigManager>(new NvmlMigManager(std::move(lib)));
}

Status NvmlMigManager::RequireSymbols() const {
  const std::pair<const void*, const char*> needed[] = {
      {reinterpret_cast<const void*>(mig_.get_uuid), "nvmlDeviceGetUUID"},
      {reinterpret_cast<const void*>(mig_.get_mig_mode), "nvmlDeviceGetMigMode"},
      {reinterpret_cast<const void*>(mig_.get_max_mig_count), "nvmlDeviceGetMaxMigDeviceCount"},
      {reinterpret_cast<const void*>(mig_.get_mig_handle), "nvmlDeviceGetMigDeviceHandleByIndex"},
      {reinterpret_cast<const void*>(mig_.get_gpu_instance_id), "nvmlDeviceGetGpuInstanceId"},
      {reinterpret_cast<const void*>(mig_.get_gpu_instance_info), "nvmlGpuInstanceGetInfo"},
      {reinterpret_cast<const void*>(mig_.get_profile_info), "nvmlDeviceGetGpuInstanceProfileInfoV"},
      {reinterpret_cast<const void*>(control_.create_gpu_instance), "nvmlDeviceCreateGpuInstanceWithPlacement"},
      {reinterpret_cast<const void*>(control_.get_placements), "nvmlDeviceGetGpuInstancePossiblePlacements_v2"},
      {reinterpret_cast<const void*>(control_.get_gpu_instances), "nvmlDeviceGetGpuInstances"},
      {reinterpret_cast<const void*>(control_.get_ci_profile_info), "nvmlGpuInstanceGetComputeInstanceProfileInfo"},
      {reinterpret_cast<const void*>(control_.create_compute_instance), "nvmlGpuInstanceCreateComputeInstance"},
      {reinterpret_cast<const void*>(control_.get_compute_instances), "nvmlGpuInstanceGetComputeInstances"},
      {reinterpret_cast<const void*>(control_.destroy_compute_instance), "nvmlComputeInstanceDestroy"},
      {reinterpret_cast<const void*>(control_.destroy_gpu_instance), "nvmlGpuInstanceDestroy"},
  };
  std::string missing;
  for (const auto& [fn, name] : needed) {
    if (fn == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(name);
  }
  if (missing.empty()) return Status::Ok();
  return Status::FailedPrecondition("NVML library " + lib_->path() + " lacks " + missing +
                                    "; dynamic MIG needs a driver with MIG instance management (R470 or later)");
}

Status NvmlMigManager::Error(const char* call, nvml::Return rc) const {
  const std::string text = std::string(call) + " failed: " + lib_->Describe(rc);
  if (rc == nvml::kErrorInsufficientResources) return Status::ResourceExhausted(text);
  if (rc == nvml::kErrorNoPermission) {
    return Status::FailedPrecondition(text + "; managing MIG instances needs root or CAP_SYS_ADMIN");
  }
  return Status::Internal(text);
}

Result<nvml::Device> NvmlMigManager::MigDevice(uint32_t gpu_index) const {
  GPOOL_RETURN_IF_ERROR(RequireSymbols());
  nvml::Device device = nullptr;
  if (nvml::Return rc = lib_->get_handle()(gpu_index, &device); rc != nvml::kSuccess) {
    return Status::NotFound(Where(gpu_index) + ": nvmlDeviceGetHandleByIndex failed: " + lib_->Describe(rc));
  }
  unsigned int current = 0;
  unsigned int pending = 0;
  if (nvml::Return rc = mig_.get_mig_mode(device, &current, &pending); rc != nvml::kSuccess) {
    return Status::FailedPrecondition(Where(gpu_index) + " cannot report its MIG mode (" + lib_->Describe(rc) +
                                      "); dynamic MIG needs a MIG-capable GPU with MIG mode enabled");
  }
  if (current != nvml::kMigEnabled) {
    return Status::FailedPrecondition(
        Where(gpu_index) + " has MIG mode disabled" +
        (pending == nvml::kMigEnabled ? " (enabled pending a reset)" : "") +
        "; dynamic MIG needs it enabled by the operator (nvidia-smi -i " + std::to_string(gpu_index) +
        " -mig 1, then a GPU reset); the worker does not switch MIG modes");
  }
  return device;
}

Result<NvmlMigManager::GiProfile> NvmlMigManager::FindProfile(nvml::Device device, uint32_t gpu_index,
                                                              const std::string& profile) const {
  std::string known;
  for (unsigned p = 0; p < nvml::kMaxGpuInstanceProfiles; ++p) {
    nvml::GpuInstanceProfileInfoV2 info{};
    info.version = nvml::kGpuInstanceProfileInfoV2;
    if (mig_.get_profile_info(device, p, &info) != nvml::kSuccess) continue;  // not on this GPU
    std::string name(info.name, strnlen(info.name, sizeof(info.name)));
    if (name.rfind("MIG ", 0) == 0) name.erase(0, 4);
    if (name == profile) return GiProfile{info.id, info.sliceCount};
    known += (known.empty() ? "" : ", ") + name;
  }
  return Status::InvalidArgument(Where(gpu_index) + " has no MIG profile " + profile + " (it has " +
                                 (known.empty() ? "none" : known) + ")");
}

Result<nvml::GpuInstancePlacement> NvmlMigManager::PlacementAt(nvml::Device device, unsigned int profile_id,
                                                               uint32_t gpu_index, const std::string& profile,
                                                               uint32_t start) const {
  nvml::GpuInstancePlacement placements[nvml::kMaxInstances] = {};
  unsigned int count = nvml::kMaxInstances;
  if (nvml::Return rc = control_.get_placements(device, profile_id, placements, &count); rc != nvml::kSuccess) {
    return Error("nvmlDeviceGetGpuInstancePossiblePlacements", rc);
  }
  for (unsigned i = 0; i < count && i < nvml::kMaxInstances; ++i) {
    if (placements[i].start == start) return placements[i];
  }
  return Status::InvalidArgument(Where(gpu_index) + " cannot place a " + Instance(profile, start) +
                                 " (not a valid placement start for that profile)");
}

Result<nvml::GpuInstance> NvmlMigManager::FindGpuInstance(nvml::Device device, unsigned int profile_id,
                                                          uint32_t start) const {
  nvml::GpuInstance instances[nvml::kMaxInstances] = {};
  unsigned int count = 0;
  if (nvml::Return rc = control_.get_gpu_instances(device, profile_id, instances, &count); rc != nvml::kSuccess) {
    return Error("nvmlDeviceGetGpuInstances", rc);
  }
  for (unsigned i = 0; i < count && i < nvml::kMaxInstances; ++i) {
    nvml::GpuInstanceInfo info{};
    if (mig_.get_gpu_instance_info(instances[i], &info) != nvml::kSuccess) continue;
    if (info.placement.start == start) return instances[i];
  }
  return nvml::GpuInstance{nullptr};
}

Status NvmlMigManager::EnsureComputeInstance(nvml::GpuInstance gi, unsigned int slices) const {
  for (unsigned p = 0; p < nvml::kMaxComputeInstanceProfiles; ++p) {
    nvml::ComputeInstanceProfileInfo info{};
    if (control_.get_ci_profile_info(gi, p, nvml::kComputeInstanceEngineProfileShared, &info) != nvml::kSuccess) {
      continue;
    }
    if (info.sliceCount != slices) continue;
    nvml::ComputeInstance existing[nvml::kMaxInstances] = {};
    unsigned int count = 0;
    if (nvml::Return rc = control_.get_compute_instances(gi, info.id, existing, &count); rc != nvml::kSuccess) {
      return Error("nvmlGpuInstanceGetComputeInstances", rc);
    }
    if (count > 0) return Status::Ok();
    nvml::ComputeInstance ci = nullptr;
    if (nvml::Return rc = control_.create_compute_instance(gi, info.id, &ci); rc != nvml::kSuccess) {
      return Error("nvmlGpuInstanceCreateComputeInstance", rc);
    }
    return Status::Ok();
  }
  return Status::Internal("no compute instance profile spans the GPU instance's " + std::to_string(slices) +
                          " slices");
}

Result<std::string> NvmlMigManager::MigUuid(nvml::Device device, nvml::GpuInstance gi, uint32_t gpu_index) const {
  nvml::GpuInstanceInfo gi_info{};
  if (nvml::Return rc = mig_.get_gpu_instance_info(gi, &gi_info); rc != nvml::kSuccess) {
    return Error("nvmlGpuInstanceGetInfo", rc);
  }
  unsigned int max = 0;
  if (nvml::Return rc = mig_.get_max_mig_count(device, &max); rc != nvml::kSuccess) {
    return Error("nvmlDeviceGetMaxMigDeviceCount", rc);
  }
  for (unsigned int i = 0; i < max && i < 64; ++i) {
    nvml::Device mig = nullptr;
    if (mig_.get_mig_handle(device, i, &mig) != nvml::kSuccess) continue;  // an empty slot
    unsigned int id = 0;
    if (mig_.get_gpu_instance_id(mig, &id) != nvml::kSuccess || id != gi_info.id) continue;
    char uuid[96] = {};
    if (nvml::Return rc = mig_.get_uuid(mig, uuid, sizeof(uuid)); rc != nvml::kSuccess) {
      return Error("nvmlDeviceGetUUID", rc);
    }
    return std::string(uuid, strnlen(uuid, sizeof(uuid)));
  }
  return Status::Internal(Where(gpu_index) + ": no MIG device for GPU instance " + std::to_string(gi_info.id) +
                          " after creating it");
}

Status NvmlMigManager::DestroyInstance(nvml::GpuInstance gi) const {
  for (unsigned p = 0; p < nvml::kMaxComputeInstanceProfiles; ++p) {
    nvml::ComputeInstanceProfileInfo info{};
    if (control_.get_ci_profile_info(gi, p, nvml::kComputeInstanceEngineProfileShared, &info) != nvml::kSuccess) {
      continue;
    }
    nvml::ComputeInstance cis[nvml::kMaxInstances] = {};
    unsigned int count = 0;
    if (control_.get_compute_instances(gi, info.id, cis, &count) != nvml::kSuccess) continue;
    for (unsigned i = 0; i < count && i < nvml::kMaxInstances; ++i) {
      if (nvml::Return rc = control_.destroy_compute_instance(cis[i]); rc != nvml::kSuccess) {
        return Error("nvmlComputeInstanceDestroy", rc);
      }
    }
  }
  if (nvml::Return rc = control_.destroy_gpu_instance(gi); rc != nvml::kSuccess) {
    return Error("nvmlGpuInstanceDestroy", rc);
  }
  return Status::Ok();
}

Result<std::string> NvmlMigManager::Create(uint32_t gpu_index, const std::string& profile, uint32_t start) {
  GPOOL_ASSIGN_OR_RETURN(nvml::Device device, MigDevice(gpu_index));
  GPOOL_ASSIGN_OR_RETURN(GiProfile gi_profile, FindProfile(device, gpu_index, profile));
  GPOOL_ASSIGN_OR_RETURN(nvml::GpuInstance gi, FindGpuInstance(device, gi_profile.id, start));
  const bool created = gi == nullptr;
  if (created) {
    GPOOL_ASSIGN_OR_RETURN(nvml::GpuInstancePlacement placement,
                           PlacementAt(device, gi_profile.id, gpu_index, profile, start));
    if (nvml::Return rc = control_.create_gpu_instance(device, gi_profile.id, &placement, &gi); rc != nvml::kSuccess) {
      Status s = Error("nvmlDeviceCreateGpuInstanceWithPlacement", rc);
      return Status(s.code(), Where(gpu_index) + ", " + Instance(profile, start) + ": " + s.message());
    }
  }
  Status ci = EnsureComputeInstance(gi, gi_profile.slices);
  Result<std::string> uuid = ci.ok() ? MigUuid(device, gi, gpu_index) : Result<std::string>(ci);
  if (!uuid.ok() && created) {
    // Leave the GPU as it was: a half-made instance would block the
    // placement for the next task and nobody would destroy it.
    (void)DestroyInstance(gi);
  }
  if (!uuid.ok()) {
    return Status(uuid.status().code(),
                  Where(gpu_index) + ", " + Instance(profile, start) + ": " + uuid.status().message());
  }
  return uuid;
}

Status NvmlMigManager::Destroy(uint32_t gpu_index, const std::string& profile, uint32_t start) {
  GPOOL_ASSIGN_OR_RETURN(nvml::Device device, MigDevice(gpu_index));
  GPOOL_ASSIGN_OR_RETURN(GiProfile gi_profile, FindProfile(device, gpu_index, profile));
  GPOOL_ASSIGN_OR_RETURN(nvml::GpuInstance gi, FindGpuInstance(device, gi_profile.id, start));
  if (gi == nullptr) return Status::Ok();  // already gone
  Status s = DestroyInstance(gi);
  if (!s.ok()) return Status(s.code(), Where(gpu_index) + ", " + Instance(profile, start) + ": " + s.message());
  return Status::Ok();
}

}  // namespace gpool::worker
