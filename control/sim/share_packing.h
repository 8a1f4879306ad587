// How closely a run packed the GPU shares it placed, against an offline
// packer that knows them all in advance: first-fit decreasing (largest share
// first, each onto the first device with room), which no online policy can
// be expected to beat by much. The gap between the two is what better share
// placement alone could still win; the rest of the unallocated share is set
// by which tasks arrived while room was left (docs/simulator.md).
#pragma once

#include <cstdint>
#include <vector>

namespace gpool::sim {

struct SharePacking {
  uint64_t devices = 0;     // devices holding shares
  uint64_t free_milli = 0;  // left free on them, in thousandths of a GPU
};

// Shares in thousandths of one GPU (1 to 999).
SharePacking FirstFitDecreasing(std::vector<uint32_t> shares);

}  // namespace gpool::sim
