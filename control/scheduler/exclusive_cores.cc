#include "control/scheduler/exclusive_cores.h"

#include <algorithm>

namespace gpool::scheduler {

uint32_t ExclusiveCoresWanted(const Resources& need) {
  return need.exclusive_cores ? static_cast<uint32_t>(need.cpu_milli / 1000) : 0;
}

std::optional<std::vector<uint32_t>> PickExclusiveCpus(const std::vector<topology::NumaSlot>& numa,
                                                       int32_t numa_node, bool single_node, uint32_t count) {
  if (count == 0) return std::vector<uint32_t>{};
  auto first_of = [count](const topology::NumaSlot& slot) {
    return std::vector<uint32_t>(slot.cpu_ids_free.begin(), slot.cpu_ids_free.begin() + count);
  };
  if (numa_node >= 0) {
    for (const auto& slot : numa) {
      if (slot.id == numa_node && slot.cpu_ids_free.size() >= count) return first_of(slot);
    }
    if (single_node) return std::nullopt;
  }
  const topology::NumaSlot* tightest = nullptr;
  for (const auto& slot : numa) {
    if (slot.cpu_ids_free.size() >= count &&
        (tightest == nullptr || slot.cpu_ids_free.size() < tightest->cpu_ids_free.size())) {
      tightest = &slot;
    }
  }
  if (tightest != nullptr) return first_of(*tightest);
  if (single_node) return std::nullopt;
  std::vector<uint32_t> ids;
  for (const auto& slot : numa) ids.insert(ids.end(), slot.cpu_ids_free.begin(), slot.cpu_ids_free.end());
  if (ids.size() < count) return std::nullopt;
  std::sort(ids.begin(), ids.end());
  ids.resize(count);
  return ids;
}

void MarkExclusiveCpus(std::vector<topology::NumaSlot>& numa, const std::vector<uint32_t>& ids, bool add,
                       const std::vector<topology::NumaSlot>& inventory) {
  for (size_t n = 0; n < numa.size() && n < inventory.size(); ++n) {
    auto& free = numa[n].cpu_ids_free;
    for (uint32_t id : ids) {
      const auto at = std::lower_bound(free.begin(), free.end(), id);
      const bool here = at != free.end() && *at == id;
      if (!add) {
        if (here) free.erase(at);
        continue;
      }
      // Back to the NUMA node whose inventory had it free at the cycle's
      // start; an id of another NUMA node is not this one's to take back.
      const auto& owned = inventory[n].cpu_ids_free;
      if (!here && std::binary_search(owned.begin(), owned.end(), id)) free.insert(at, id);
    }
  }
}

}  // namespace gpool::scheduler
