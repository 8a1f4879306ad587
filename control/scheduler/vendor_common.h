// Vendor rule internals: the building blocks the per-family rules
// (vendor_<family>.cc) share, and each family's entry points, which
// vendor_rules.cc dispatches to. The interface is vendor_rules.h; nothing
// outside the vendor rule files includes this.
//
// These live in gpool::scheduler::vendor with external linkage, not in each
// file's anonymous namespace: several families use them, and CI compiles a
// target as a unity build, where two files' file-local helpers of one name
// would collide in one translation unit. A family's own helpers stay in its
// file, in an anonymous namespace inside this one, under names no other file
// uses.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "control/scheduler/vendor_rules.h"

namespace gpool::scheduler::vendor {

// Positions into the caller's `devices` vector (not slots: slots are only
// echoed back in the pick).
using Positions = std::vector<size_t>;
using Groups = std::map<int32_t, Positions>;  // ordered, so scans are deterministic

// ---------------------------------------------------------------- helpers --

uint64_t CeilDiv(uint64_t a, uint64_t b);

// Sets `why` (may be null) to the reason and refuses.
std::optional<VendorPick> Refuse(std::string* why, std::string reason);

bool CoreUsed(const VendorDevice& d, uint32_t core);
uint32_t UsedCores(const VendorDevice& d);

// Free for whole use: healthy, nobody holds it whole and nobody shares it.
bool WholeFree(const VendorDevice& d);

bool WantsShare(const VendorRequest& r);

// The node's device count: the request's when it names one, else the devices given.
uint32_t NodeSize(const std::vector<VendorDevice>& devices, const VendorRequest& r);

// Positions of devices passing `keep`, in device-index order (slot breaks ties).
template <typename Keep>
Positions Select(const std::vector<VendorDevice>& devices, Keep keep) {
  Positions out;
  for (size_t p = 0; p < devices.size(); ++p) {
    if (keep(devices[p])) out.push_back(p);
  }
  std::sort(out.begin(), out.end(), [&](size_t a, size_t b) {
    return std::tie(devices[a].index, devices[a].slot) < std::tie(devices[b].index, devices[b].slot);
  });
  return out;
}

template <typename GroupOf, typename Keep>
Groups GroupBy(const std::vector<VendorDevice>& devices, GroupOf group_of, Keep keep) {
  Groups groups;
  for (size_t p : Select(devices, keep)) groups[group_of(devices[p])].push_back(p);
  return groups;
}

// The first `count` of `members`.
Positions Prefix(const Positions& members, size_t count);

// The pick of the chosen positions, its slots in device-index order.
VendorPick PickOf(const std::vector<VendorDevice>& devices, Positions chosen);

VendorPick WithScore(VendorPick pick, int64_t score);

// ------------------------------------------------------------- sharing --

// The memory a share takes on `d`: the request's MiB, or its percentage of the device.
uint64_t ShareMemory(const VendorDevice& d, const VendorRequest& r);

bool ShareFits(const VendorDevice& d, uint64_t memory_mib, uint32_t compute_pct);

// `count` devices each taking the same memory/compute share; `vendor` names
// the rule in a refusal.
std::optional<VendorPick> PickShared(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                     std::string_view vendor, std::string* why);

// --------------------------------------------------------- static checks --

// nullopt when `count` is one of `allowed`, else the rule `what` breaks.
std::optional<std::string> CountIn(std::string_view what, const std::vector<uint32_t>& allowed, uint32_t count);

// nullopt when `count` devices fit a node of `node_devices` (0: unknown).
std::optional<std::string> NotAbove(std::string_view what, uint32_t count, uint32_t node_devices);

// ------------------------------------------------------------- families --
// Each family's picks and static checks (vendor_rules.h describes the
// rules). The dispatch has already validated the request and filled in
// node_devices and device_cores.

// vendor_ascend.cc
std::optional<VendorPick> PickAscend910(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                        std::string* why);
std::optional<VendorPick> PickAscend910B(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                         std::string* why);
std::optional<VendorPick> PickAscend910C(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                         std::string* why);
std::optional<std::string> CheckAscend(DeviceFamily family, const VendorRequest& r);

// vendor_kunlun.cc
std::optional<VendorPick> PickKunlun(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                     std::string* why);
std::optional<std::string> CheckKunlun(const VendorRequest& r);

// vendor_neuron.cc
std::optional<VendorPick> PickNeuron(DeviceFamily family, const std::vector<VendorDevice>& devices,
                                     const VendorRequest& r, std::string* why);
std::optional<std::string> CheckNeuron(DeviceFamily family, const VendorRequest& r);
// NeuronCores per device: the request's, else the first device that reports them; 0 when none does.
uint32_t DeviceCores(const std::vector<VendorDevice>& devices, const VendorRequest& r);

// vendor_metax.cc
std::optional<VendorPick> PickMetax(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                    std::string* why);

// vendor_enflame.cc
std::optional<VendorPick> PickEnflame(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                      std::string* why);

}  // namespace gpool::scheduler::vendor
