// SimulatedMigManager: the MigManager of simulated nodes (--spec), whose
// GPUs may not exist. Create names the instance the scheduler chose with a
// stable synthetic id, "MIG-<gpu uuid>-<profile>-<start>" (the form static
// MIG instances of a spec default to); Destroy has nothing to undo.
//
// Thread-safety: immutable after construction.
#pragma once

#include "protocol/types.h"
#include "worker/runner/mig_manager.h"

namespace gpool::worker {

// The synthetic id; what device_env.h also uses when no MigManager is set.
std::string SimulatedMigUuid(const std::string& gpu_uuid, const std::string& profile, uint32_t start);

class SimulatedMigManager final : public MigManager {
 public:
  explicit SimulatedMigManager(NodeSpec node) : node_(std::move(node)) {}

  // NotFound when the node has no GPU with that index.
  Result<std::string> Create(uint32_t gpu_index, const std::string& profile, uint32_t start) override;
  Status Destroy(uint32_t, const std::string&, uint32_t) override { return Status::Ok(); }

 private:
  NodeSpec node_;
};

}  // namespace gpool::worker
