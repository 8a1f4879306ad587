#include "control/scheduler/vendor_rules.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "protocol/base/text.h"

namespace gpool::scheduler {
namespace {

// Positions into the caller's `devices` vector (not slots: slots are only
// echoed back in the pick).
using Positions = std::vector<size_t>;
using Groups = std::map<int32_t, Positions>;  // ordered, so scans are deterministic

constexpr uint32_t kKunlunHandleLimit = 32;
constexpr uint64_t kP800MemoryMib = 98304;  // HAMi's Kunlun vXPU default (96 GiB)
constexpr int64_t kMetaxPairScore = 10;     // HAMi metax DirectLinkScore

// ---------------------------------------------------------------- helpers --

bool Has(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

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

// Free for whole use: healthy, nobody holds it whole and nobody shares it.
bool WholeFree(const VendorDevice& d) {
  return d.free && d.tenants == 0 && d.memory_used_mib == 0 && d.compute_used_pct == 0 && UsedCores(d) == 0;
}

bool WantsShare(const VendorRequest& r) { return r.memory_mib > 0 || r.memory_pct > 0 || r.compute_pct > 0; }

uint32_t NodeSize(const std::vector<VendorDevice>& devices, const VendorRequest& r) {
  return r.node_devices != 0 ? r.node_devices : static_cast<uint32_t>(devices.size());
}

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

// How many devices each group has at all, free or not.
template <typename GroupOf>
std::map<int32_t, size_t> GroupSizes(const std::vector<VendorDevice>& devices, GroupOf group_of) {
  std::map<int32_t, size_t> sizes;
  for (const auto& d : devices) ++sizes[group_of(d)];
  return sizes;
}

// Device index -> position, for rules written in device indices.
std::map<uint32_t, size_t> PositionOfIndex(const std::vector<VendorDevice>& devices) {
  std::map<uint32_t, size_t> at;
  for (size_t p = 0; p < devices.size(); ++p) at.emplace(devices[p].index, p);
  return at;
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

// The first group, taking wanted free-counts in `order`, whose free count is
// exactly that; then, as a fallback for unusual layouts, the best fit.
std::optional<std::pair<int32_t, Positions>> GroupByPreference(const Groups& groups, size_t count,
                                                               const std::vector<size_t>& order) {
  for (size_t want : order) {
    for (const auto& [group, members] : groups) {
      if (members.size() == want && want >= count) return std::pair{group, Prefix(members, count)};
    }
  }
  std::optional<std::pair<int32_t, Positions>> best;
  size_t best_size = 0;
  for (const auto& [group, members] : groups) {
    if (members.size() >= count && (!best || members.size() < best_size)) {
      best = std::pair{group, Prefix(members, count)};
      best_size = members.size();
    }
  }
  return best;
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

// Shared devices first (binpack: whole devices stay whole), then the one the
// share fills most, then index.
Positions PackOrder(const std::vector<VendorDevice>& devices, Positions candidates, const VendorRequest& r) {
  auto key = [&](size_t p) {
    const auto& d = devices[p];
    const uint64_t left = d.memory_mib - d.memory_used_mib - ShareMemory(d, r);  // candidates fit, so no underflow
    return std::make_tuple(d.tenants == 0, left, 100 - d.compute_used_pct, d.index, d.slot);
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  return candidates;
}

// `count` devices each taking the same memory/compute share.
std::optional<VendorPick> PickShared(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                     std::string_view vendor, std::string* why) {
  Positions fits = Select(devices, [&](const VendorDevice& d) { return ShareFits(d, ShareMemory(d, r), r.compute_pct); });
  if (fits.size() < r.count) {
    return Refuse(why, std::string(vendor) + ": " + std::to_string(fits.size()) + " device(s) have room for the share, " +
                           std::to_string(r.count) + " needed");
  }
  Positions chosen = Prefix(PackOrder(devices, std::move(fits), r), r.count);
  VendorPick pick = PickOf(devices, chosen);
  pick.memory_mib_each = ShareMemory(devices[chosen.front()], r);
  pick.share_pct = r.compute_pct;
  return pick;
}

// --------------------------------------------------------------- Ascend --

int32_t Ring910(const VendorDevice& d) { return d.link_group >= 0 ? d.link_group : static_cast<int32_t>(d.index / 4); }
int32_t Half910B(const VendorDevice& d) { return d.link_group >= 0 ? d.link_group : static_cast<int32_t>(d.index / 8); }
int32_t Mesh910B(const VendorDevice& d) { return std::max(d.link_group, 0); }
int32_t Module910C(const VendorDevice& d) { return static_cast<int32_t>(d.index / 2); }

VendorPick WithScore(VendorPick pick, int64_t score) {
  pick.score = score;
  return pick;
}

// Whole groups (every device of the group whole-free), lowest ids first,
// until `count` devices are taken.
template <typename GroupOf>
std::optional<Positions> WholeGroups(const std::vector<VendorDevice>& devices, GroupOf group_of, size_t count) {
  const Groups free = GroupBy(devices, group_of, WholeFree);
  const auto sizes = GroupSizes(devices, group_of);
  Positions chosen;
  for (const auto& [group, members] : free) {
    if (chosen.size() >= count) break;
    if (members.size() == sizes.at(group) && chosen.size() + members.size() <= count) {
      chosen.insert(chosen.end(), members.begin(), members.end());
    }
  }
  if (chosen.size() != count) return std::nullopt;
  return chosen;
}

std::optional<VendorPick> PickAscend910(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                        std::string* why) {
  if (WantsShare(r)) return PickShared(devices, r, "Ascend vNPU", why);
  const size_t n = r.count;
  if (n > 4) {
    if (auto rings = WholeGroups(devices, Ring910, n)) return PickOf(devices, *rings);
    return Refuse(why, "Ascend 910: " + std::to_string(n) + " chips need " + std::to_string(n / 4) +
                           " wholly free HCCS rings of 4");
  }
  // MindCluster's ring order: leave rings either full or empty, and even.
  static const std::map<size_t, std::vector<size_t>> kOrder = {{1, {1, 3, 2, 4}}, {2, {2, 4, 3}}, {4, {4}}};
  const Groups rings = GroupBy(devices, Ring910, WholeFree);
  auto found = GroupByPreference(rings, n, kOrder.at(n));
  if (!found) return Refuse(why, "Ascend 910: no HCCS ring with " + std::to_string(n) + " free chips");
  const int64_t leftover = static_cast<int64_t>(rings.at(found->first).size() - n);
  return WithScore(PickOf(devices, found->second), -leftover);
}

std::optional<VendorPick> PickAscend910BHalves(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                               std::string* why) {
  const size_t n = r.count;
  if (n > 8) {
    if (auto halves = WholeGroups(devices, Half910B, n)) return PickOf(devices, *halves);
    return Refuse(why, "Ascend 910B: " + std::to_string(n) + " chips need the whole 16-chip node free");
  }
  const Groups halves = GroupBy(devices, Half910B, WholeFree);
  auto found = GroupByPreference(halves, n, {});  // best fit, as module910bx16's priority arrays
  if (!found) return Refuse(why, "Ascend 910B: no HCCS half with " + std::to_string(n) + " free chips");
  const int64_t leftover = static_cast<int64_t>(halves.at(found->first).size() - n);
  return WithScore(PickOf(devices, found->second), -leftover);
}

// 8-chip A2 is one full mesh: any chips do; reported link groups are only a
// preference (best fit into one, else the groups with most free first).
std::optional<VendorPick> PickAscend910BMesh(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                             std::string* why) {
  const size_t n = r.count;
  const Groups groups = GroupBy(devices, Mesh910B, WholeFree);
  if (auto found = GroupByPreference(groups, n, {})) {
    const int64_t leftover = static_cast<int64_t>(groups.at(found->first).size() - n);
    return WithScore(PickOf(devices, found->second), -leftover);
  }
  std::vector<std::pair<int32_t, Positions>> by_free(groups.begin(), groups.end());
  std::stable_sort(by_free.begin(), by_free.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  Positions chosen;
  size_t touched_free = 0;
  for (const auto& [group, members] : by_free) {
    if (chosen.size() == n) break;
    touched_free += members.size();
    for (size_t p : members) {
      if (chosen.size() < n) chosen.push_back(p);
    }
  }
  if (chosen.size() < n) {
    return Refuse(why, "Ascend 910B: " + std::to_string(chosen.size()) + " free chips, " + std::to_string(n) + " needed");
  }
  return WithScore(PickOf(devices, chosen), -static_cast<int64_t>(touched_free - n));
}

std::optional<VendorPick> PickAscend910B(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                         std::string* why) {
  if (WantsShare(r)) return PickShared(devices, r, "Ascend vNPU", why);
  if (NodeSize(devices, r) >= 16) return PickAscend910BHalves(devices, r, why);
  return PickAscend910BMesh(devices, r, why);
}

std::optional<VendorPick> PickAscend910C(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                         std::string* why) {
  if (WantsShare(r)) return PickShared(devices, r, "Ascend vNPU", why);
  const Groups modules = GroupBy(devices, Module910C, WholeFree);
  const auto sizes = GroupSizes(devices, Module910C);
  if (r.count == 1) {
    // A die whose partner is busy first, so whole modules stay whole.
    for (const auto& [module, members] : modules) {
      if (members.size() == 1 && sizes.at(module) == 2) return PickOf(devices, members);
    }
    if (modules.empty()) return Refuse(why, "Ascend 910C: no free die");
    return PickOf(devices, Prefix(modules.begin()->second, 1));  // lowest whole module
  }
  Positions chosen;
  for (const auto& [module, members] : modules) {
    if (members.size() == 2 && chosen.size() < r.count) chosen.insert(chosen.end(), members.begin(), members.end());
  }
  if (chosen.size() < r.count) {
    return Refuse(why, "Ascend 910C: " + std::to_string(r.count) + " dies need " + std::to_string(r.count / 2) +
                           " wholly free SIO modules, " + std::to_string(chosen.size() / 2) + " free");
  }
  return PickOf(devices, chosen);
}

// --------------------------------------------------------------- Kunlun --

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

// Candidate sets in HAMi's order: whole node; a wing by free-count order;
// then the cross-wing links. Slices first try devices already split.
std::vector<Positions> KunlunCandidates(const std::vector<VendorDevice>& devices, size_t n, uint32_t parts,
                                        uint32_t node_devices) {
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

std::optional<VendorPick> PickKunlun(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                     std::string* why) {
  const uint64_t device_mib = devices.empty() ? kP800MemoryMib : KunlunMemory(devices.front());
  const uint32_t parts = KunlunPartsFor(device_mib, r);
  const uint32_t node_devices = NodeSize(devices, r);
  const auto candidates = KunlunCandidates(devices, r.count, parts, node_devices);
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

// --------------------------------------------------------------- Neuron --

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

uint32_t DeviceCores(const std::vector<VendorDevice>& devices, const VendorRequest& r) {
  if (r.device_cores != 0) return r.device_cores;
  for (const auto& d : devices) {
    if (d.cores != 0) return d.cores;
  }
  return 0;
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
  std::optional<std::tuple<uint32_t, uint32_t, uint32_t, size_t>> best;  // (free cores, run length, run start, position)
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

std::optional<VendorPick> PickNeuron(DeviceFamily family, const std::vector<VendorDevice>& devices,
                                     const VendorRequest& r, std::string* why) {
  const uint32_t node_devices = NodeSize(devices, r);
  uint32_t n = r.count;
  if (r.cores > 0) {
    const uint32_t per_device = DeviceCores(devices, r);
    if (per_device == 0) return Refuse(why, "Neuron: devices report no NeuronCores");
    if (r.cores <= per_device) return PickNeuronCoresOnOneDevice(devices, r.cores, why);
    if (r.cores % per_device != 0) {
      return Refuse(why, "Neuron: " + std::to_string(r.cores) + " cores is neither up to one device nor a multiple of " +
                             std::to_string(per_device));
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

// ---------------------------------------------------------------- MetaX --

int32_t MetaxZone(const VendorDevice& d) { return d.link_group > 0 ? d.link_group : 0; }

// Sum over pairs of the set sharing one zone (zone 0 is none).
int64_t LinkScore(const std::vector<VendorDevice>& devices, const Positions& set) {
  int64_t score = 0;
  for (size_t i = 0; i < set.size(); ++i) {
    for (size_t j = i + 1; j < set.size(); ++j) {
      const int32_t zone = MetaxZone(devices[set[i]]);
      if (zone != 0 && zone == MetaxZone(devices[set[j]])) score += kMetaxPairScore;
    }
  }
  return score;
}

// HAMi's topology score: 10 x allocated - loss, loss being the link pairs
// among free devices the pick breaks apart.
int64_t MetaxScore(const std::vector<VendorDevice>& devices, const Positions& available, const Positions& chosen) {
  Positions rest;
  for (size_t p : available) {
    if (std::find(chosen.begin(), chosen.end(), p) == chosen.end()) rest.push_back(p);
  }
  const int64_t allocated = LinkScore(devices, chosen);
  const int64_t loss = LinkScore(devices, available) - allocated - LinkScore(devices, rest);
  return 10 * allocated - loss;
}

std::optional<VendorPick> PickMetax(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                    std::string* why) {
  if (WantsShare(r)) return PickShared(devices, r, "MetaX", why);
  const Positions available = Select(devices, WholeFree);
  if (available.size() < r.count) {
    return Refuse(why, "MetaX: " + std::to_string(available.size()) + " whole devices free, " + std::to_string(r.count) +
                           " needed");
  }
  Groups by_zone = GroupBy(devices, MetaxZone, WholeFree);
  const Positions no_zone = by_zone.count(0) != 0 ? by_zone.at(0) : Positions{};
  by_zone.erase(0);
  std::vector<Positions> zones;
  for (auto& [zone, members] : by_zone) zones.push_back(members);
  std::stable_sort(zones.begin(), zones.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
  Positions chosen;
  for (const auto& members : zones) {  // 1. inside one zone, the smallest that holds it
    if (members.size() >= r.count) {
      chosen = Prefix(members, r.count);
      break;
    }
  }
  if (chosen.empty()) {  // 2. across zones, smallest first; 3. then devices without a zone
    for (const auto& members : zones) chosen.insert(chosen.end(), members.begin(), members.end());
    chosen.insert(chosen.end(), no_zone.begin(), no_zone.end());
    chosen = Prefix(chosen, r.count);
  }
  return WithScore(PickOf(devices, chosen), MetaxScore(devices, available, chosen));
}

// -------------------------------------------------------------- Enflame --

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
  // Most used first (binpack), then index.
  std::optional<std::tuple<bool, uint32_t, uint32_t, size_t>> best;
  for (size_t p : Select(devices, fits)) {
    const auto& d = devices[p];
    const auto key = std::make_tuple(d.tenants == 0, 100 - d.compute_used_pct, d.index, p);
    if (!best || key < *best) best = key;
  }
  if (!best) return Refuse(why, "Enflame: no GCU with room for the share");
  const auto& d = devices[std::get<3>(*best)];
  VendorPick pick = PickOf(devices, {std::get<3>(*best)});
  pick.share_pct = *EnflameShare(d, r);
  pick.memory_mib_each = d.memory_mib * pick.share_pct / 100;
  return pick;
}

// --------------------------------------------------------- static checks --

std::string CountList(const std::vector<uint32_t>& counts) {
  std::string out;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (i > 0) out += i + 1 == counts.size() ? " or " : ", ";
    out += std::to_string(counts[i]);
  }
  return out;
}

std::optional<std::string> CountIn(std::string_view what, const std::vector<uint32_t>& allowed, uint32_t count) {
  if (std::find(allowed.begin(), allowed.end(), count) != allowed.end()) return std::nullopt;
  return std::string(what) + " takes " + CountList(allowed) + " per task, not " + std::to_string(count);
}

std::optional<std::string> NotAbove(std::string_view what, uint32_t count, uint32_t node_devices) {
  if (node_devices == 0 || count <= node_devices) return std::nullopt;
  return std::string(what) + ": " + std::to_string(count) + " devices asked, node has " + std::to_string(node_devices);
}

std::optional<std::string> CheckAscend(DeviceFamily family, const VendorRequest& r) {
  if (r.cores > 0) return "Ascend has no core-level requests";
  if (WantsShare(r) && r.count != 1) return "Ascend vNPU shares are one chip per task";
  if (auto e = NotAbove("Ascend", r.count, r.node_devices)) return e;
  switch (family) {
    case DeviceFamily::kAscend910:
      return CountIn("Ascend 910", {1, 2, 4, 8}, r.count);
    case DeviceFamily::kAscend910B:
      if (r.node_devices >= 16) return CountIn("Ascend 910B (16-chip)", {1, 2, 4, 8, 16}, r.count);
      if (r.node_devices == 0 && r.count > 8) return CountIn("Ascend 910B", {16}, r.count);
      return std::nullopt;  // 8-chip A2 is a full mesh: any count
    default:
      if (r.count == 1 || r.count % 2 == 0) return std::nullopt;
      return "Ascend 910C takes 1 or an even count of dies (whole SIO modules), not " + std::to_string(r.count);
  }
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

std::optional<std::string> CheckNeuronCount(DeviceFamily family, uint32_t n, uint32_t node_devices) {
  if (auto e = NotAbove("Neuron", n, node_devices)) return e;
  if (family == DeviceFamily::kNeuronRing || n == node_devices) return std::nullopt;  // the whole node is always valid
  return CountIn("Neuron Trainium", {1, 4, 8, 16}, n);
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

std::optional<std::string> CheckShares(const VendorRequest& r) {
  if (r.count == 0 && r.cores == 0) return "request names no devices";
  if (r.memory_pct > 100) return "memory share above 100%";
  if (r.compute_pct > 100) return "compute share above 100%";
  return std::nullopt;
}

}  // namespace

DeviceFamily FamilyOf(std::string_view vendor_in, std::string_view model_in) {
  const std::string vendor = AsciiLower(vendor_in);
  const std::string model = AsciiLower(model_in);
  if (Has(vendor, "huawei") || Has(vendor, "ascend") || Has(model, "ascend")) {
    if (Has(model, "910c") || Has(model, "910_93") || Has(model, "91093")) return DeviceFamily::kAscend910C;
    if (Has(model, "910b")) return DeviceFamily::kAscend910B;
    if (Has(model, "910")) return DeviceFamily::kAscend910;
    return DeviceFamily::kGeneric;  // 310P and others: no rule here
  }
  if (Has(vendor, "kunlun") || Has(vendor, "baidu") || Has(model, "kunlun")) return DeviceFamily::kKunlun;
  if (Has(vendor, "aws") || Has(vendor, "amazon") || Has(vendor, "neuron") || Has(model, "trainium") ||
      Has(model, "inferentia")) {
    if (Has(model, "inf")) return DeviceFamily::kNeuronRing;
    return DeviceFamily::kNeuron;
  }
  if (Has(vendor, "metax") || Has(model, "metax")) return DeviceFamily::kMetax;
  if (Has(vendor, "enflame") || Has(model, "enflame")) return DeviceFamily::kEnflame;
  return DeviceFamily::kGeneric;
}

std::string_view FamilyName(DeviceFamily family) {
  switch (family) {
    case DeviceFamily::kGeneric:
      return "generic";
    case DeviceFamily::kAscend910:
      return "ascend-910";
    case DeviceFamily::kAscend910B:
      return "ascend-910b";
    case DeviceFamily::kAscend910C:
      return "ascend-910c";
    case DeviceFamily::kKunlun:
      return "kunlun";
    case DeviceFamily::kNeuron:
      return "neuron-trainium";
    case DeviceFamily::kNeuronRing:
      return "neuron-inferentia";
    case DeviceFamily::kMetax:
      return "metax";
    case DeviceFamily::kEnflame:
      return "enflame";
  }
  return "unknown";
}

std::optional<std::string> CheckVendorRequest(DeviceFamily family, const VendorRequest& request) {
  if (family == DeviceFamily::kGeneric) return std::nullopt;
  if (auto e = CheckShares(request)) return e;
  switch (family) {
    case DeviceFamily::kAscend910:
    case DeviceFamily::kAscend910B:
    case DeviceFamily::kAscend910C:
      return CheckAscend(family, request);
    case DeviceFamily::kKunlun:
      return CheckKunlun(request);
    case DeviceFamily::kNeuron:
    case DeviceFamily::kNeuronRing:
      return CheckNeuron(family, request);
    case DeviceFamily::kMetax:
    case DeviceFamily::kEnflame:
      if (request.cores > 0) return std::string(FamilyName(family)) + " has no core-level requests";
      if (family == DeviceFamily::kEnflame && WantsShare(request) && request.count != 1) {
        return "Enflame shares a GCU only for single-device requests";
      }
      return NotAbove(FamilyName(family), request.count, request.node_devices);
    case DeviceFamily::kGeneric:
      break;
  }
  return std::nullopt;
}

std::optional<VendorPick> PickVendorDevices(DeviceFamily family, const std::vector<VendorDevice>& devices,
                                            const VendorRequest& request, std::string* why) {
  if (family == DeviceFamily::kGeneric) return Refuse(why, "no vendor rule");
  VendorRequest r = request;
  if (r.node_devices == 0) r.node_devices = static_cast<uint32_t>(devices.size());
  if (r.device_cores == 0) r.device_cores = DeviceCores(devices, r);
  if (auto invalid = CheckVendorRequest(family, r)) return Refuse(why, *invalid);
  switch (family) {
    case DeviceFamily::kAscend910:
      return PickAscend910(devices, r, why);
    case DeviceFamily::kAscend910B:
      return PickAscend910B(devices, r, why);
    case DeviceFamily::kAscend910C:
      return PickAscend910C(devices, r, why);
    case DeviceFamily::kKunlun:
      return PickKunlun(devices, r, why);
    case DeviceFamily::kNeuron:
    case DeviceFamily::kNeuronRing:
      return PickNeuron(family, devices, r, why);
    case DeviceFamily::kMetax:
      return PickMetax(devices, r, why);
    case DeviceFamily::kEnflame:
      return PickEnflame(devices, r, why);
    case DeviceFamily::kGeneric:
      break;
  }
  return Refuse(why, "no vendor rule");
}

}  // namespace gpool::scheduler
