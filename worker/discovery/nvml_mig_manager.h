// NvmlMigManager: the MigManager of real NVIDIA GPUs (dynamic MIG), through
// a dlopen'ed NVML that stays initialised for the worker's lifetime.
//
// Create(gpu, profile, start):
//   1. MIG mode must already be on (nvmlDeviceGetMigMode): switching it
//      needs a GPU reset, which would kill other work on the GPU, so the
//      worker leaves it to the operator and fails with how to do it.
//   2. The GPU instance profile whose NVML name ("MIG 1g.10gb", trimmed) is
//      `profile`, over the NVML_GPU_INSTANCE_PROFILE_* indices.
//   3. A GPU instance of that profile already at `start` is reused (a bind
//      resent, a worker restart); otherwise nvmlDeviceCreateGpuInstanceWith-
//      Placement with the possible placement that begins at `start`.
//   4. One compute instance over the whole GPU instance (the compute
//      profile with the GPU instance's slice count), unless one exists.
//   5. The MIG device whose GPU instance id is the instance's: its uuid.
//   What this call created is destroyed again when a later step fails.
// Destroy(gpu, profile, start): every compute instance of the GPU instance
// of that profile at `start`, then the GPU instance; none there: Ok.
//
// Errors: symbols the driver lacks (before R470) -> FailedPrecondition
// naming them; MIG mode off -> FailedPrecondition; an unknown profile or no
// placement at `start` -> InvalidArgument; NVML_ERROR_INSUFFICIENT_RESOURCES
// (an overlapping or full placement) -> ResourceExhausted; NO_PERMISSION ->
// FailedPrecondition (creating instances needs root or CAP_SYS_ADMIN);
// other NVML failures -> Internal. Messages name the NVML call and error.
//
// Thread-safety: one thread at a time (NvmlLibrary's rule).
#pragma once

#include <memory>
#include <string>

#include "worker/discovery/nvml_api.h"
#include "worker/discovery/nvml_library.h"
#include "worker/runner/mig_manager.h"

namespace gpool::worker {

class NvmlMigManager final : public MigManager {
 public:
  // Fails as NvmlLibrary::Open does. A driver without the MIG entry points
  // still opens; Create and Destroy then fail.
  static Result<std::unique_ptr<NvmlMigManager>> Open(const std::string& library);

  Result<std::string> Create(uint32_t gpu_index, const std::string& profile, uint32_t start) override;
  Status Destroy(uint32_t gpu_index, const std::string& profile, uint32_t start) override;

 private:
  struct GiProfile {
    unsigned int id = 0;
    unsigned int slices = 0;
  };

  explicit NvmlMigManager(std::unique_ptr<NvmlLibrary> lib);

  Status RequireSymbols() const;
  // The GPU by index, with MIG mode on.
  Result<nvml::Device> MigDevice(uint32_t gpu_index) const;
  Result<GiProfile> FindProfile(nvml::Device device, uint32_t gpu_index, const std::string& profile) const;
  // The GPU instance of `profile_id` placed at `start`; nullptr when none.
  Result<nvml::GpuInstance> FindGpuInstance(nvml::Device device, unsigned int profile_id, uint32_t start) const;
  Result<nvml::GpuInstancePlacement> PlacementAt(nvml::Device device, unsigned int profile_id, uint32_t gpu_index,
                                                 const std::string& profile, uint32_t start) const;
  // Creates the full compute instance unless one exists.
  Status EnsureComputeInstance(nvml::GpuInstance gi, unsigned int slices) const;
  Result<std::string> MigUuid(nvml::Device device, nvml::GpuInstance gi, uint32_t gpu_index) const;
  Status DestroyInstance(nvml::GpuInstance gi) const;
  Status Error(const char* call, nvml::Return rc) const;

  std::unique_ptr<NvmlLibrary> lib_;
  nvml::MigApi mig_;
  nvml::MigControlApi control_;
};

}  // namespace gpool::worker
