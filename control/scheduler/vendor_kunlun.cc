// Kunlunxin P800 rules (vendor_rules.h): whole devices by wing and the
// cross-wing links, quarter and half vXPU slices, and the driver's handle
// limit.
#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>

#include "control/scheduler/vendor_common.h"

namespace gpool::scheduler::vendor {
namespace {

constexpr uint32_t kKunlunHandleLimit = 32;
constexpr uint64_t kP800MemoryMib = 98304;  // HAMi's Kunlun vXPU default (96 GiB)

// Device index -> position, for rules written in device indices.
std::map<uint32_t, size_t> PositionOfIndex(const std::vector<VendorDevice>& devices) {
  std::map<uint32_t, size_t> at;
  for (size_t p = 0; p < devices.size(); ++p) at.emplace(devices[p].index, p);
  return at;
}

int32_t Wing(const VendorDevice& d) { return d.link_group >= 0 ? d.link_group : (d.index < 4 ? 0 : 1); }

uint64_t KunlunMemory(const VendorDevice& d) { return d.memory_mib != 0 ? d.memory_mib : kP800MemoryMib; }

// Slices a share cuts a device into: 4 (quarter), 2 (half) or 1 (whole).
uint32_t KunlunPartsFor(uint64_t device_mib, const VendorRequest& r) {
  if (!WantsShare(r)) return 1;
  const uint64_t memory = r.memory_mib > 0 ? r.memory_mib : CeilDiv(device_mib * r.memory_pct, 100);
  auto parts_for_memory = [&]() -> uint32_t {
    if (memory == 0) return 4;
    if (memory * 4 <= device_mib) return 4;
    if (memory * 2 <= device_mib) return 2;
    return 1;
  };
  auto parts_for_compute = [&]() -> uint32_t {
    if (r.compute_pct <= 25) return 4;
    if (r.compute_pct <= 50) return 2;
    return 1;
  };
  return std::min(parts_for_memory(), parts_for_compute());
}

// How a shared device is already split (slices are all one size, so the
// average share tells); 0 when nobody shares it.
uint32_t KunlunSplit(const VendorDevice& d) {
  if (d.tenants == 0 || d.memory_used_mib == 0) return 0;
  const uint64_t slice = d.memory_used_mib / d.tenants;
  const uint64_t memory = KunlunMemory(d);
  if (slice * 4 <= memory) return 4;
  if (slice * 2 <= memory) return 2;
  return 1;
}

bool KunlunFits(const VendorDevice& d, uint32_t parts) {
  if (WholeFree(d)) return true;
  if (parts == 1 || !d.free) return false;
  return KunlunSplit(d) == parts && d.tenants < parts &&
         d.memory_used_mib + KunlunMemory(d) / parts <= KunlunMemory(d) && d.compute_used_pct + 100 / parts <= 100;
}

// Driver handles: one per device, plus one per slice of every split device.
uint32_t KunlunHandles(const std::vector<VendorDevice>& devices, uint32_t node_devices, const Positions& chosen,
                       uint32_t parts) {
  uint32_t handles = node_devices;
  for (const auto& d : devices) {
    const uint32_t split = KunlunSplit(d);
    if (split > 1) handles += split;
  }
  for (size_t p : chosen) {
    if (parts > 1 && KunlunSplit(devices[p]) == 0) handles += parts;
  }
  return handles;
}

// A single slice under gpu_policy spread (vendor_rules.h): every device that
// takes the slice size, the least split first (fewest slices in use, an
// unsplit device before a split one), then the device whose wing a single
// whole device would be taken from first (1, 3, 2, 4 whole devices left),
// so the spread slices keep whole wings whole as long as binpack's would.
// PickKunlun still skips any whose split would pass the handle limit.
std::vector<Positions> KunlunSpreadSlice(const std::vector<VendorDevice>& devices, uint32_t parts) {
  std::map<int32_t, size_t> whole_in_wing;
  for (const auto& d : devices) {
    if (WholeFree(d)) ++whole_in_wing[Wing(d)];
  }
  auto wing_rank = [&](const VendorDevice& d) -> size_t {
    static const std::vector<size_t> kSingleOrder = {1, 3, 2, 4};
    const size_t whole = whole_in_wing[Wing(d)];
    const auto it = std::find(kSingleOrder.begin(), kSingleOrder.end(), whole);
    return it != kSingleOrder.end() ? static_cast<size_t>(it - kSingleOrder.begin()) : kSingleOrder.size() + whole;
  };
  Positions fitting = Select(devices, [&](const VendorDevice& d) { return KunlunFits(d, parts); });
  auto key = [&](size_t p) {
    const auto& d = devices[p];
    return std::make_tuple(d.tenants, d.memory_used_mib, wing_rank(d), d.index, d.slot);
  };
  std::stable_sort(fitting.begin(), fitting.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  std::vector<Positions> out;
  for (size_t p : fitting) out.push_back({p});
  return out;
}

// Candidate sets in HAMi's order: whole node; a wing by free-count order;
// then the cross-wing links. Slices first try devices already split.
std::vector<Positions> KunlunCandidates(const std::vector<VendorDevice>& devices, size_t n, uint32_t parts,
                                        uint32_t node_devices, PlacementPolicy gpu_policy) {
  if (n == 1 && parts > 1 && gpu_policy == PlacementPolicy::kSpread) return KunlunSpreadSlice(devices, parts);
  auto fits = [&](const VendorDevice& d) { return KunlunFits(d, parts); };
  std::vector<Positions> out;
  if (n >= node_devices) {
    Positions all = Select(devices, fits);
    if (all.size() >= n) out.push_back(Prefix(all, n));
    return out;
  }
  // Within a wing, split devices first: no new handles, whole devices stay whole.
  auto split_first = [&](Positions members) {
    std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      return KunlunSplit(devices[a]) > KunlunSplit(devices[b]) ||
             (KunlunSplit(devices[a]) == KunlunSplit(devices[b]) && devices[a].tenants > devices[b].tenants);
    });
    return members;
  };
  if (n == 1 && parts > 1) {
    for (size_t p : split_first(Select(devices, [&](const VendorDevice& d) { return fits(d) && !WholeFree(d); }))) {
      out.push_back({p});
    }
  }
  static const std::map<size_t, std::vector<size_t>> kOrder = {{1, {1, 3, 2, 4}}, {2, {2, 3, 4}}, {4, {4}}};
  const Groups wings = GroupBy(devices, Wing, fits);
  const auto order = kOrder.count(n) != 0 ? kOrder.at(n) : std::vector<size_t>{};
  for (size_t want : order) {
    for (const auto& [wing, members] : wings) {
      if (members.size() == want) out.push_back(Prefix(split_first(members), n));
    }
  }
  for (const auto& [wing, members] : wings) {
    if (members.size() >= n) out.push_back(Prefix(split_first(members), n));  // any layout the order misses
  }
  static const std::vector<std::vector<uint32_t>> kCross2 = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
  static const std::vector<std::vector<uint32_t>> kCross4 = {{0, 1, 4, 5}, {2, 3, 6, 7}, {0, 2, 4, 6},
                                                             {1, 3, 5, 7}, {0, 3, 4, 7}, {1, 2, 5, 6}};
  const auto at = PositionOfIndex(devices);
  for (const auto& set : n == 2 ? kCross2 : n == 4 ? kCross4 : std::vector<std::vector<uint32_t>>{}) {
    Positions chosen;
    for (uint32_t index : set) {
      auto it = at.find(index);
      if (it != at.end() && fits(devices[it->second])) chosen.push_back(it->second);
    }
    if (chosen.size() == n) out.push_back(chosen);
  }
  return out;
}

}  // namespace

std::optional<VendorPick> PickKunlun(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                     std::string* why) {
  const uint64_t device_mib = devices.empty() ? kP800MemoryMib : KunlunMemory(devices.front());
  const uint32_t parts = KunlunPartsFor(device_mib, r);
  const uint32_t node_devices = NodeSize(devices, r);
  const auto candidates = KunlunCandidates(devices, r.count, parts, node_devices, r.gpu_policy);
  if (candidates.empty()) {
    return Refuse(why, "Kunlun: no wing or cross-wing link set with " + std::to_string(r.count) + " fitting devices");
  }
  uint32_t fewest = UINT32_MAX;
  for (const auto& chosen : candidates) {
    const uint32_t handles = KunlunHandles(devices, node_devices, chosen, parts);
    fewest = std::min(fewest, handles);
    if (handles > kKunlunHandleLimit) continue;
    VendorPick pick = PickOf(devices, chosen);
    if (parts > 1) {
      pick.memory_mib_each = device_mib / parts;
      pick.share_pct = 100 / parts;
    }
    return pick;
  }
  return Refuse(why, "Kunlun: would need " + std::to_string(fewest) + " driver handles, limit is " +
                         std::to_string(kKunlunHandleLimit));
}

std::optional<std::string> CheckKunlun(const VendorRequest& r) {
  if (r.cores > 0) return "Kunlun has no core-level requests";
  if (auto e = CountIn("Kunlun", {1, 2, 4, 8}, r.count)) return e;
  if (auto e = NotAbove("Kunlun", r.count, r.node_devices)) return e;
  const uint32_t parts = KunlunPartsFor(kP800MemoryMib, r);
  const uint32_t node_devices = r.node_devices != 0 ? r.node_devices : 8;
  const uint32_t handles = node_devices + (parts > 1 ? r.count * parts : 0);
  if (handles > kKunlunHandleLimit) {
    return "Kunlun: " + std::to_string(r.count) + " slices of 1/" + std::to_string(parts) + " need " +
           std::to_string(handles) + " driver handles, limit is " + std::to_string(kKunlunHandleLimit);
  }
  return std::nullopt;
}

}  // namespace gpool::scheduler::vendor
