// AWS Neuron rules (vendor_rules.h): Trainium's aligned torus blocks,
// Inferentia's contiguous ring runs, and NeuronCore requests.
#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "control/scheduler/vendor_common.h"

namespace gpool::scheduler::vendor {
namespace {

// Whole-free devices as a set of indices, for contiguity rules.
std::map<uint32_t, size_t> FreeIndices(const std::vector<VendorDevice>& devices) {
  std::map<uint32_t, size_t> at;
  for (size_t p : Select(devices, WholeFree)) at.emplace(devices[p].index, p);
  return at;
}

bool BlockFree(const std::map<uint32_t, size_t>& free, uint32_t start, uint32_t n) {
  for (uint32_t i = start; i < start + n; ++i) {
    if (free.count(i) == 0) return false;
  }
  return true;
}

Positions BlockPositions(const std::map<uint32_t, size_t>& free, uint32_t start, uint32_t n) {
  Positions out;
  for (uint32_t i = start; i < start + n; ++i) out.push_back(free.at(i));
  return out;
}

// Trainium: aligned blocks of n. Buddy-style best fit: the block whose
// enclosing larger block is most used, so big blocks stay whole.
std::optional<Positions> TorusBlock(const std::vector<VendorDevice>& devices, uint32_t n, uint32_t node_devices) {
  const auto free = FreeIndices(devices);
  const uint32_t parent = n == 1 ? 4 : n * 2;
  std::optional<std::pair<size_t, uint32_t>> best;  // (free devices in the parent block, start)
  for (uint32_t start = 0; start + n <= node_devices; start += n) {
    if (!BlockFree(free, start, n)) continue;
    const uint32_t parent_start = start / parent * parent;
    size_t parent_free = 0;
    for (uint32_t i = parent_start; i < parent_start + parent; ++i) parent_free += free.count(i);
    const std::pair<size_t, uint32_t> key{parent_free, start};
    if (!best || key < *best) best = key;
  }
  if (!best) return std::nullopt;
  return BlockPositions(free, best->second, n);
}

// Inferentia ring: n contiguous devices from the shortest free run that holds them.
std::optional<Positions> RingRun(const std::vector<VendorDevice>& devices, uint32_t n) {
  const auto free = FreeIndices(devices);
  std::optional<std::pair<uint32_t, uint32_t>> best;  // (run length, run start)
  for (auto it = free.begin(); it != free.end();) {
    const uint32_t start = it->first;
    uint32_t length = 0;
    while (it != free.end() && it->first == start + length) {
      ++length;
      ++it;
    }
    if (length >= n && (!best || std::pair{length, start} < *best)) best = std::pair{length, start};
  }
  if (!best) return std::nullopt;
  return BlockPositions(free, best->second, n);
}

std::optional<Positions> NeuronDevices(DeviceFamily family, const std::vector<VendorDevice>& devices, uint32_t n,
                                       uint32_t node_devices) {
  return family == DeviceFamily::kNeuron ? TorusBlock(devices, n, node_devices) : RingRun(devices, n);
}

// Shortest run of free cores on `d` holding `want`: (length, first core).
std::optional<std::pair<uint32_t, uint32_t>> CoreRun(const VendorDevice& d, uint32_t want) {
  std::optional<std::pair<uint32_t, uint32_t>> best;
  for (uint32_t c = 0; c < d.cores;) {
    if (CoreUsed(d, c)) {
      ++c;
      continue;
    }
    const uint32_t start = c;
    while (c < d.cores && !CoreUsed(d, c)) ++c;
    const uint32_t length = c - start;
    if (length >= want && (!best || std::pair{length, start} < *best)) best = std::pair{length, start};
  }
  return best;
}

// Up to one device's cores: a contiguous run on the most used device that has one.
std::optional<VendorPick> PickNeuronCoresOnOneDevice(const std::vector<VendorDevice>& devices, uint32_t want,
                                                     std::string* why) {
  // (free cores, run length, run start, position)
  std::optional<std::tuple<uint32_t, uint32_t, uint32_t, size_t>> best;
  for (size_t p : Select(devices, [](const VendorDevice& d) { return d.free && d.cores > 0; })) {
    const auto& d = devices[p];
    auto run = CoreRun(d, want);
    if (!run) continue;
    const auto key = std::make_tuple(d.cores - UsedCores(d), run->first, run->second, p);
    if (!best || key < *best) best = key;
  }
  if (!best) return Refuse(why, "Neuron: no device with " + std::to_string(want) + " contiguous free cores");
  const auto& d = devices[std::get<3>(*best)];
  VendorPick pick = PickOf(devices, {std::get<3>(*best)});
  for (uint32_t c = std::get<2>(*best); c < std::get<2>(*best) + want; ++c) pick.cores.push_back(d.index * d.cores + c);
  return pick;
}

std::optional<std::string> CheckNeuronCount(DeviceFamily family, uint32_t n, uint32_t node_devices) {
  if (auto e = NotAbove("Neuron", n, node_devices)) return e;
  if (family == DeviceFamily::kNeuronRing || n == node_devices) return std::nullopt;  // the whole node is always valid
  return CountIn("Neuron Trainium", {1, 4, 8, 16}, n);
}

}  // namespace

uint32_t DeviceCores(const std::vector<VendorDevice>& devices, const VendorRequest& r) {
  if (r.device_cores != 0) return r.device_cores;
  for (const auto& d : devices) {
    if (d.cores != 0) return d.cores;
  }
  return 0;
}

std::optional<VendorPick> PickNeuron(DeviceFamily family, const std::vector<VendorDevice>& devices,
                                     const VendorRequest& r, std::string* why) {
  const uint32_t node_devices = NodeSize(devices, r);
  uint32_t n = r.count;
  if (r.cores > 0) {
    const uint32_t per_device = DeviceCores(devices, r);
    if (per_device == 0) return Refuse(why, "Neuron: devices report no NeuronCores");
    if (r.cores <= per_device) return PickNeuronCoresOnOneDevice(devices, r.cores, why);
    if (r.cores % per_device != 0) {
      return Refuse(why, "Neuron: " + std::to_string(r.cores) +
                             " cores is neither up to one device nor a multiple of " + std::to_string(per_device));
    }
    n = r.cores / per_device;
  }
  auto chosen = NeuronDevices(family, devices, n, node_devices);
  if (!chosen) {
    return Refuse(why, family == DeviceFamily::kNeuron
                           ? "Neuron: no free aligned block of " + std::to_string(n) + " devices"
                           : "Neuron: no run of " + std::to_string(n) + " contiguous free devices");
  }
  VendorPick pick = PickOf(devices, *chosen);
  if (r.cores > 0) {
    for (size_t p : *chosen) {
      for (uint32_t c = 0; c < devices[p].cores; ++c) pick.cores.push_back(devices[p].index * devices[p].cores + c);
    }
    std::sort(pick.cores.begin(), pick.cores.end());
  }
  return pick;
}

std::optional<std::string> CheckNeuron(DeviceFamily family, const VendorRequest& r) {
  if (WantsShare(r)) return "Neuron shares by cores, not by memory or compute";
  if (r.cores == 0) return CheckNeuronCount(family, r.count, r.node_devices);
  if (r.count > 1) return "Neuron takes devices or cores per task, not both";
  if (r.device_cores == 0 || r.cores <= r.device_cores) return std::nullopt;
  if (r.cores % r.device_cores != 0) {
    return "Neuron: " + std::to_string(r.cores) + " cores is neither up to one device nor a multiple of " +
           std::to_string(r.device_cores);
  }
  return CheckNeuronCount(family, r.cores / r.device_cores, r.node_devices);
}

}  // namespace gpool::scheduler::vendor
