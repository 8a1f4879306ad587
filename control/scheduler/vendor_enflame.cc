// Enflame GCU rules (vendor_rules.h): whole devices, and single-device
// percentage shares rounded up to the device's slice granularity.
#include <algorithm>
#include <cstdint>
#include <tuple>

#include "control/scheduler/vendor_common.h"

namespace gpool::scheduler::vendor {
namespace {

// The share as a percentage of `d`, rounded up to its slice granularity.
std::optional<uint32_t> EnflameShare(const VendorDevice& d, const VendorRequest& r) {
  uint64_t pct = std::max(r.compute_pct, r.memory_pct);
  if (r.memory_mib > 0) {
    if (d.memory_mib == 0) return std::nullopt;
    pct = std::max(pct, CeilDiv(r.memory_mib * 100, d.memory_mib));
  }
  if (pct > 100) return std::nullopt;
  const uint64_t slices = d.slices != 0 ? d.slices : 100;
  const uint64_t taken = CeilDiv(std::max<uint64_t>(pct, 1) * slices, 100);
  return static_cast<uint32_t>(taken * 100 / slices);
}

}  // namespace

std::optional<VendorPick> PickEnflame(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                      std::string* why) {
  if (!WantsShare(r)) {
    Positions free = Select(devices, WholeFree);
    if (free.size() < r.count) {
      return Refuse(why, "Enflame: " + std::to_string(free.size()) + " whole GCUs free, " + std::to_string(r.count) +
                             " needed");
    }
    return PickOf(devices, Prefix(free, r.count));
  }
  auto fits = [&](const VendorDevice& d) {
    auto pct = EnflameShare(d, r);
    return pct && ShareFits(d, d.memory_mib * *pct / 100, *pct);
  };
  // Default and binpack: shared GCUs first, the most used of them, then
  // index. Spread: the least compute in use (a share bounds compute and
  // memory together), then the least memory, then index.
  const bool spread = r.gpu_policy == PlacementPolicy::kSpread;
  std::optional<std::tuple<bool, uint32_t, uint64_t, uint32_t, size_t>> best;
  for (size_t p : Select(devices, fits)) {
    const auto& d = devices[p];
    const auto key = spread ? std::make_tuple(false, d.compute_used_pct, d.memory_used_mib, d.index, p)
                            : std::make_tuple(d.tenants == 0, 100 - d.compute_used_pct, uint64_t{0}, d.index, p);
    if (!best || key < *best) best = key;
  }
  if (!best) return Refuse(why, "Enflame: no GCU with room for the share");
  const auto& d = devices[std::get<4>(*best)];
  VendorPick pick = PickOf(devices, {std::get<4>(*best)});
  pick.share_pct = *EnflameShare(d, r);
  pick.memory_mib_each = d.memory_mib * pick.share_pct / 100;
  return pick;
}

}  // namespace gpool::scheduler::vendor
