#include "topology/cluster_view.h"

namespace gpool::topology {

uint32_t NodeView::FreeGpus() const {
  uint32_t free = 0;
  for (const auto& gpu : gpus) free += (gpu.healthy && !gpu.allocated) ? 1 : 0;
  return free;
}

uint32_t NodeView::UsableGpus() const {
  uint32_t usable = 0;
  for (const auto& gpu : gpus) usable += gpu.healthy ? 1 : 0;
  return usable;
}

}  // namespace gpool::topology

namespace gpool::topology {

std::string TierLabel(uint32_t tier) { return "topology.gpool.io/tier" + std::to_string(tier); }

bool PendingJob::Started() const {
  for (const auto& group : groups) {
    if (group.active > 0) return true;
  }
  return false;
}

}  // namespace gpool::topology
