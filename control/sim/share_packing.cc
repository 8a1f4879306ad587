#include "control/sim/share_packing.h"

#include <algorithm>
#include <functional>

namespace gpool::sim {

SharePacking FirstFitDecreasing(std::vector<uint32_t> shares) {
  constexpr uint32_t kWhole = 1000;
  std::sort(shares.begin(), shares.end(), std::greater<>());
  // Room left per device, in opening order. A run places thousands of
  // shares, so a linear first-fit scan stays within milliseconds.
  std::vector<uint32_t> room;
  for (uint32_t share : shares) {
    share = std::clamp<uint32_t>(share, 1, kWhole);
    auto device = std::find_if(room.begin(), room.end(), [&](uint32_t left) { return left >= share; });
    if (device == room.end()) {
      room.push_back(kWhole - share);
    } else {
      *device -= share;
    }
  }
  SharePacking packing;
  packing.devices = room.size();
  for (uint32_t left : room) packing.free_milli += left;
  return packing;
}

}  // namespace gpool::sim
