#include "worker/runner/simulated_mig_manager.h"

namespace gpool::worker {

std::string SimulatedMigUuid(const std::string& gpu_uuid, const std::string& profile, uint32_t start) {
  return "MIG-" + gpu_uuid + "-" + profile + "-" + std::to_string(start);
}

Result<std::string> SimulatedMigManager::Create(uint32_t gpu_index, const std::string& profile, uint32_t start) {
  for (const auto& gpu : node_.gpus) {
    if (gpu.index == gpu_index) return SimulatedMigUuid(gpu.uuid, profile, start);
  }
  return Status::NotFound("GPU " + std::to_string(gpu_index) + " does not exist on node " + node_.name);
}

}  // namespace gpool::worker
