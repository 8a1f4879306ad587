// Huawei Ascend rules (vendor_rules.h): 910 HCCS rings of 4, 910B full mesh
// or two 8-chip halves, 910C SIO modules of 2 dies, and vNPU shares.
#include <algorithm>
#include <map>
#include <utility>

#include "control/scheduler/vendor_common.h"

namespace gpool::scheduler::vendor {
namespace {

// How many devices each group has at all, free or not.
template <typename GroupOf>
std::map<int32_t, size_t> GroupSizes(const std::vector<VendorDevice>& devices, GroupOf group_of) {
  std::map<int32_t, size_t> sizes;
  for (const auto& d : devices) ++sizes[group_of(d)];
  return sizes;
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

int32_t Ring910(const VendorDevice& d) { return d.link_group >= 0 ? d.link_group : static_cast<int32_t>(d.index / 4); }
int32_t Half910B(const VendorDevice& d) { return d.link_group >= 0 ? d.link_group : static_cast<int32_t>(d.index / 8); }
int32_t Mesh910B(const VendorDevice& d) { return std::max(d.link_group, 0); }
int32_t Module910C(const VendorDevice& d) { return static_cast<int32_t>(d.index / 2); }

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
    return Refuse(why,
                  "Ascend 910B: " + std::to_string(chosen.size()) + " free chips, " + std::to_string(n) + " needed");
  }
  return WithScore(PickOf(devices, chosen), -static_cast<int64_t>(touched_free - n));
}

}  // namespace

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

}  // namespace gpool::scheduler::vendor
