// MetaX sGPU rules (vendor_rules.h): exclusive multi-device tasks by MetaLink
// zone, scored as HAMi scores them, and memory/compute shares.
#include <algorithm>
#include <cstdint>

#include "control/scheduler/vendor_common.h"

namespace gpool::scheduler::vendor {
namespace {

constexpr int64_t kMetaxPairScore = 10;  // HAMi metax DirectLinkScore

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

}  // namespace

std::optional<VendorPick> PickMetax(const std::vector<VendorDevice>& devices, const VendorRequest& r,
                                    std::string* why) {
  if (WantsShare(r)) return PickShared(devices, r, "MetaX", why);
  const Positions available = Select(devices, WholeFree);
  if (available.size() < r.count) {
    return Refuse(why, "MetaX: " + std::to_string(available.size()) + " whole devices free, " +
                           std::to_string(r.count) + " needed");
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

}  // namespace gpool::scheduler::vendor
