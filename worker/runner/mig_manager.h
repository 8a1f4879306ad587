// MigManager: creates and destroys the MIG instances of dynamic-MIG GPUs
// (GpuInfo.mig_mode "dynamic"), where the coordinator picks the profile and
// placement and the worker must make the instance exist before the task
// starts. A MIG instance here is a GPU instance with one compute instance
// covering all of it, named by (GPU index, profile, placement start).
//
// Create returns the MIG device uuid the task is given (CUDA takes it in
// CUDA_VISIBLE_DEVICES). It is idempotent: an instance of that profile
// already at that placement (a bind resent, a worker restarted under a
// running task) is reused, not an error. Destroy of an instance that is not
// there succeeds, so a retried Destroy is harmless.
//
// Implementations: SimulatedMigManager (--spec nodes, nothing to create)
// and NvmlMigManager (discovery/nvml_mig_manager.h, real GPUs).
//
// Thread-safety: implementations are used by one thread (the task
// manager's).
#pragma once

#include <cstdint>
#include <string>

#include "protocol/base/status.h"

namespace gpool::worker {

class MigManager {
 public:
  virtual ~MigManager() = default;

  virtual Result<std::string> Create(uint32_t gpu_index, const std::string& profile, uint32_t start) = 0;
  virtual Status Destroy(uint32_t gpu_index, const std::string& profile, uint32_t start) = 0;
};

}  // namespace gpool::worker
