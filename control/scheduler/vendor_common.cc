// Vendor rule internals shared by the families (vendor_common.h): device
// state, picks, memory/compute shares and the count checks.
#include "control/scheduler/vendor_common.h"

#include <utility>

namespace gpool::scheduler::vendor {

// ---------------------------------------------------------------- helpers --

uint64_t CeilDiv(uint64_t a, uint64_t b) { return b == 0 ? 0 : (a + b - 1) / b; }

std::optional<VendorPick> Refuse(std::string* why, std::string reason) {
  if (why != nullptr) *why = std::move(reason);
  return std::nullopt;
}

bool CoreUsed(const VendorDevice& d, uint32_t core) { return core < d.cores_used.size() && d.cores_used[core]; }

uint32_t UsedCores(const VendorDevice& d) {
  uint32_t used = 0;
  for (uint32_t c = 0; c < d.cores; ++c) used += CoreUsed(d, c) ? 1 : 0;
  return used;
}

bool WholeFree(const VendorDevice& d) {
  return d.free && d.tenants == 0 && d.memory_used_mib == 0 && d.compute_used_pct == 0 && UsedCores(d) == 0;
}

bool WantsShare(const VendorRequest& r) { return r.memory_mib > 0 || r.memory_pct > 0 || r.compute_pct > 0; }

uint32_t NodeSize(const std::vector<VendorDevice>& devices, const VendorRequest& r) {
  return r.node_devices != 0 ? r.node_devices : static_cast<uint32_t>(devices.size());
}

Positions Prefix(const Positions& members, size_t count) {
  return Positions(members.begin(), members.begin() + static_cast<std::ptrdiff_t>(count));
}

VendorPick PickOf(const std::vector<VendorDevice>& devices, Positions chosen) {
  std::sort(chosen.begin(), chosen.end(), [&](size_t a, size_t b) {
    return std::tie(devices[a].index, devices[a].slot) < std::tie(devices[b].index, devices[b].slot);
  });
  VendorPick pick;
  for (size_t p : chosen) pick.slots.push_back(devices[p].slot);
  return pick;
}

VendorPick WithScore(VendorPick pick, int64_t score) {
  pick.score = score;
  return pick;
}

// ------------------------------------------------------------- sharing --

uint64_t ShareMemory(const VendorDevice& d, const VendorRequest& r) {
  if (r.memory_mib > 0) return r.memory_mib;
  return CeilDiv(d.memory_mib * r.memory_pct, 100);
}

bool ShareFits(const VendorDevice& d, uint64_t memory_mib, uint32_t compute_pct) {
  if (!d.free || UsedCores(d) > 0) return false;
  if (d.memory_used_mib + memory_mib > d.memory_mib) return false;
  if (d.compute_used_pct + compute_pct > 100) return false;
  // A share with no compute guarantee still needs some compute left.
  return compute_pct > 0 || d.compute_used_pct < 100;
}

namespace {

// Default and binpack: shared devices first (whole devices stay whole), then
// the one the share fills most, then index. Spread: the most memory left,
// then the most compute left, then index; an unshared device has the most of
// both, so no separate "shared first" term (vendor_rules.h).
Positions PackOrder(const std::vector<VendorDevice>& devices, Positions candidates, const VendorRequest& r) {
  const bool spread = r.gpu_policy == PlacementPolicy::kSpread;
  auto key = [&](size_t p) {
    const auto& d = devices[p];
    const uint64_t left = d.memory_mib - d.memory_used_mib - ShareMemory(d, r);  // candidates fit, so no underflow
    const uint32_t compute_left = 100 - d.compute_used_pct;
    if (spread) return std::make_tuple(false, ~left, ~compute_left, d.index, d.slot);
    return std::make_tuple(d.tenants == 0, left, compute_left, d.index, d.slot);
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  return candidates;
}

}  // namespace

std::optional<VendorPick> PickShared(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                     std::string_view vendor, std::string* why) {
  Positions fits =
      Select(devices, [&](const VendorDevice& d) { return ShareFits(d, ShareMemory(d, r), r.compute_pct); });
  if (fits.size() < r.count) {
    return Refuse(why, std::string(vendor) + ": " + std::to_string(fits.size()) +
                           " device(s) have room for the share, " + std::to_string(r.count) + " needed");
  }
  Positions chosen = Prefix(PackOrder(devices, std::move(fits), r), r.count);
  VendorPick pick = PickOf(devices, chosen);
  pick.memory_mib_each = ShareMemory(devices[chosen.front()], r);
  pick.share_pct = r.compute_pct;
  return pick;
}

// --------------------------------------------------------- static checks --

namespace {

std::string CountList(const std::vector<uint32_t>& counts) {
  std::string out;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (i > 0) out += i + 1 == counts.size() ? " or " : ", ";
    out += std::to_string(counts[i]);
  }
  return out;
}

}  // namespace

std::optional<std::string> CountIn(std::string_view what, const std::vector<uint32_t>& allowed, uint32_t count) {
  if (std::find(allowed.begin(), allowed.end(), count) != allowed.end()) return std::nullopt;
  return std::string(what) + " takes " + CountList(allowed) + " per task, not " + std::to_string(count);
}

std::optional<std::string> NotAbove(std::string_view what, uint32_t count, uint32_t node_devices) {
  if (node_devices == 0 || count <= node_devices) return std::nullopt;
  return std::string(what) + ": " + std::to_string(count) + " devices asked, node has " + std::to_string(node_devices);
}

}  // namespace gpool::scheduler::vendor
