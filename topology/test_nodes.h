// Node specs for tests (not part of the library), shared by topology's and
// the worker's tests.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/types.h"

namespace gpool::topology::testing {

// A node "n1" with 8 cores, 8 GiB and `gpus` GPUs of `vendor` (uuids GPU-<i>).
inline NodeSpec MakeGpuNode(uint32_t gpus, const std::string& vendor = "nvidia") {
  NodeSpec node;
  node.name = "n1";
  node.cpu_milli = 8000;
  node.memory_mib = 8192;
  for (uint32_t i = 0; i < gpus; ++i) {
    GpuInfo gpu;
    gpu.index = i;
    gpu.uuid = "GPU-" + std::to_string(i);
    gpu.vendor = vendor;
    node.gpus.push_back(gpu);
  }
  return node;
}

}  // namespace gpool::topology::testing
