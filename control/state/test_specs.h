// Node specs for state-machine tests.
#pragma once

#include <string>

#include "protocol/types.h"

namespace gpool::state::testing {

// A node with `gpus` A100s (uuids GPU-<name>-<i>), 64 cores and 256 GiB.
inline NodeSpec MakeNode(const std::string& name, uint32_t gpus) {
  NodeSpec node;
  node.name = name;
  node.cpu_milli = 64'000;
  node.memory_mib = 256 * 1024;
  for (uint32_t i = 0; i < gpus; ++i) {
    node.gpus.push_back(GpuInfo{.index = i, .uuid = "GPU-" + name + "-" + std::to_string(i), .model = "A100"});
  }
  return node;
}

}  // namespace gpool::state::testing
