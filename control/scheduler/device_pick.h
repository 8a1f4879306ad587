// DevicePick: which devices of a node a task that does not take whole GPUs
// gets: GPU shares (fractional memory and compute) or a MIG instance.
//
// Shares go best fit: onto the devices with the least room left that still
// hold them, so partly used devices fill up and whole devices stay free for
// whole-GPU work; a job with gpu_policy spread asks for the opposite (the
// device with the most room left, so its shares contend the least).
//
// A MIG task takes an instance on a device already in MIG mode before
// switching an idle device to MIG, and the smallest instance that holds it
// (lowest slot on a tie); default and binpack both mean exactly this. Under
// spread, of the devices already in MIG mode it takes the one with the fewest
// instances in use, then the fewest memory slices in use, then the same
// smallest instance and lowest slot. Spread still switches an idle device
// only when no MIG device holds the instance: MIG instances are isolated in
// hardware (their own compute and memory slices), so an emptier MIG device
// buys a job little, while an idle device switched to MIG is a whole GPU
// that whole-GPU work loses until its last instance goes. What instances on
// one device do share (the PCIe link, copy and media engines, power) grows
// with their count, hence fewest instances first.
//
// Both honour the job's NUMA policy. Pure.
#pragma once

#include <cstdint>
#include <vector>

#include "control/scheduler/device_bits.h"
#include "protocol/types.h"
#include "topology/cluster_view.h"
#include "topology/device_share.h"

namespace gpool::scheduler {

struct DevicePick {
  std::vector<size_t> slots;  // positions in node.gpus; empty when nothing fits
  DeviceGrant grant;
  topology::Misfit misfit = topology::Misfit::kNone;  // why nothing fits: the most telling device's reason
  bool Ok() const { return !slots.empty(); }
};

// `loads` and `allowed` are parallel to node.gpus; `allowed` already
// excludes unhealthy devices, other models and UUIDs the job may not use.
DevicePick PickShared(const topology::NodeView& node, const std::vector<topology::DeviceLoad>& loads,
                      const DeviceBits& allowed, const Resources& need, topology::NumaPolicy numa,
                      topology::PlacementPolicy gpu_policy = topology::PlacementPolicy::kDefault);

}  // namespace gpool::scheduler
