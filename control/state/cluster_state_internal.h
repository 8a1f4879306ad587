// Helpers shared by the cluster_state*.cc files that implement ClusterState;
// not part of its interface. Kept out of anonymous namespaces so that a unity
// build, which compiles those files as one translation unit, sees each once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string_view>

#include "protocol/types.h"

namespace gpool::state::internal {

// The idempotency index's hash of a job's idempotency key.
inline uint64_t KeyHash(std::string_view key) { return std::hash<std::string_view>{}(key); }

// A job some group of which scales by signal (ClusterState::scale_jobs).
inline bool HasScaleRule(const JobSpec& spec) {
  return std::any_of(spec.tasks.begin(), spec.tasks.end(), [](const TaskGroupSpec& g) { return g.scale.Enabled(); });
}

}  // namespace gpool::state::internal
