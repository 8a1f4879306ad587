#include "worker/discovery/nvml_mig.h"

#include <cctype>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace gpool::worker {
namespace {

struct Profile {
  unsigned int id = 0;
  unsigned int slices = 0;
  unsigned long long memory_mb = 0;
  unsigned int decoders = 0;
  unsigned int jpegs = 0;
  unsigned int ofas = 0;
  std::string name;
};

struct Found {
  MigDeviceInfo info;
  unsigned int gpu_instance_id = 0;
  bool placed = false;  // info.start is the real placement start
};

// "<digits>g.<...>gb<suffix>": the form the scheduler and ValidateNodeSpec
// accept; NVML's names ("MIG 1g.10gb") are trimmed to it.
bool IsProfileName(const std::string& name) {
  const size_t g = name.find("g.");
  if (g == 0 || g == std::string::npos) return false;
  for (size_t i = 0; i < g; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return false;
  }
  return name.find("gb", g) != std::string::npos && name.size() <= 32;
}

std::vector<Profile> ProfileTable(const nvml::MigApi& api, nvml::Device device) {
  std::vector<Profile> table;
  if (api.get_profile_info == nullptr) return table;
  for (unsigned p = 0; p < nvml::kMaxGpuInstanceProfiles; ++p) {
    nvml::GpuInstanceProfileInfoV2 info{};
    info.version = nvml::kGpuInstanceProfileInfoV2;
    if (api.get_profile_info(device, p, &info) != nvml::kSuccess) continue;  // not on this GPU
    std::string name(info.name, strnlen(info.name, sizeof(info.name)));
    if (name.rfind("MIG ", 0) == 0) name.erase(0, 4);
    if (!IsProfileName(name)) continue;
    table.push_back({info.id, info.sliceCount, info.memorySizeMB, info.decoderCount, info.jpegCount, info.ofaCount,
                     name});
  }
  return table;
}

std::optional<std::string> ProfileName(const std::vector<Profile>& table, const nvml::DeviceAttributes* attributes,
                                       std::optional<unsigned int> profile_id) {
  if (profile_id) {
    for (const Profile& p : table) {
      if (p.id == *profile_id) return p.name;
    }
  }
  if (attributes == nullptr) return std::nullopt;
  for (const Profile& p : table) {
    if (p.slices == attributes->gpuInstanceSliceCount && p.memory_mb == attributes->memorySizeMB &&
        p.decoders == attributes->sharedDecoderCount && p.jpegs == attributes->sharedJpegCount &&
        p.ofas == attributes->sharedOfaCount) {
      return p.name;
    }
  }
  if (attributes->gpuInstanceSliceCount == 0 || attributes->memorySizeMB == 0) return std::nullopt;
  const unsigned long long gib = (attributes->memorySizeMB + 1023) / 1024;
  return std::to_string(attributes->gpuInstanceSliceCount) + "g." + std::to_string(gib) + "gb";
}

std::optional<Found> ProbeInstance(const nvml::MigApi& api, nvml::Device parent, nvml::Device mig,
                                   const std::vector<Profile>& table) {
  Found found;
  char uuid[96] = {};
  if (api.get_uuid == nullptr || api.get_uuid(mig, uuid, sizeof(uuid)) != nvml::kSuccess) return std::nullopt;
  found.info.uuid.assign(uuid, strnlen(uuid, sizeof(uuid)));
  if (found.info.uuid.empty()) return std::nullopt;

  nvml::DeviceAttributes attributes{};
  const bool have_attributes = api.get_attributes != nullptr && api.get_attributes(mig, &attributes) == nvml::kSuccess;
  if (have_attributes && attributes.computeInstanceSliceCount < attributes.gpuInstanceSliceCount) {
    return std::nullopt;  // a compute instance with part of its GPU instance (see header)
  }
  std::optional<unsigned int> profile_id;
  if (api.get_gpu_instance_id != nullptr && api.get_gpu_instance_id(mig, &found.gpu_instance_id) == nvml::kSuccess) {
    nvml::GpuInstance instance = nullptr;
    nvml::GpuInstanceInfo info{};
    if (api.get_gpu_instance != nullptr && api.get_gpu_instance_info != nullptr &&
        api.get_gpu_instance(parent, found.gpu_instance_id, &instance) == nvml::kSuccess &&
        api.get_gpu_instance_info(instance, &info) == nvml::kSuccess) {
      found.info.start = info.placement.start;
      found.placed = true;
      profile_id = info.profileId;
    }
  }
  auto name = ProfileName(table, have_attributes ? &attributes : nullptr, profile_id);
  if (!name) return std::nullopt;
  found.info.profile = std::move(*name);
  return found;
}

}  // namespace

void ProbeMig(const nvml::MigApi& api, nvml::Device device, GpuInfo* gpu) {
  gpu->mig_mode.clear();
  gpu->mig_instances.clear();
  if (api.get_mig_mode == nullptr || api.get_max_mig_count == nullptr || api.get_mig_handle == nullptr) return;
  unsigned int current = 0;
  unsigned int pending = 0;
  if (api.get_mig_mode(device, &current, &pending) != nvml::kSuccess || current != nvml::kMigEnabled) return;
  gpu->mig_mode = "static";

  unsigned int max = 0;
  if (api.get_max_mig_count(device, &max) != nvml::kSuccess) return;
  const std::vector<Profile> table = ProfileTable(api, device);
  std::vector<Found> found;
  for (unsigned int i = 0; i < max && i < 64; ++i) {
    nvml::Device mig = nullptr;
    if (api.get_mig_handle(device, i, &mig) != nvml::kSuccess) continue;  // an empty slot
    if (auto instance = ProbeInstance(api, device, mig, table)) found.push_back(std::move(*instance));
  }
  bool all_placed = true;
  for (const Found& f : found) all_placed = all_placed && f.placed;
  for (Found& f : found) {
    if (!all_placed) f.info.start = f.gpu_instance_id;
    gpu->mig_instances.push_back(std::move(f.info));
  }
}

}  // namespace gpool::worker
