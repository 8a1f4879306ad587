// GpuPicker: which free GPUs of a node a task gets.
//
// GPUs joined by NVLink talk an order of magnitude faster than over PCIe, so
// where a task's GPUs sit inside a node matters as much as which node:
//   - a multi-GPU task gets the best-connected set that fits, preferring a
//     free NVLink group of exactly its size (a free 4-group over splitting an
//     8-group), then the smallest group that holds it;
//   - a single-GPU task takes GPUs from broken-up groups first, so complete
//     groups stay whole for the tasks that need them;
//   - with NUMA policy single-numa-node every GPU must sit on one NUMA node
//     (else the node is rejected: "NUMA not fit"); best-effort prefers one.
// Links are taken as symmetric (a link either side reports counts). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/scheduler/device_bits.h"
#include "topology/cluster_view.h"

namespace gpool::scheduler {

struct GpuRequest {
  uint32_t count = 0;
  std::string model;  // "" any
  topology::NumaPolicy numa = topology::NumaPolicy::kNone;
};

// Slot positions (indices into node.gpus) of the chosen GPUs, or nullopt
// when the free GPUs cannot satisfy the request. `free` is parallel to
// node.gpus and already excludes unhealthy GPUs.
std::optional<std::vector<size_t>> PickGpus(const topology::NodeView& node, const DeviceBits& free,
                                            const GpuRequest& request);

}  // namespace gpool::scheduler
