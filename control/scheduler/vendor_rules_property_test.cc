// VendorRules under random picks and releases: nothing over-committed and
// every family's structural rule kept (vendor_rules.h). Split from
// vendor_rules_test.cc.
#include "control/scheduler/vendor_rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "topology/lcg.h"

namespace gpool::scheduler {
namespace {

using F = DeviceFamily;

// A node under random picks and releases with the caller's accounting
// applied, checking after every pick that nothing is over-committed and the
// family's structural rule held.
class Simulation {
 public:
  Simulation(DeviceFamily family, std::vector<VendorDevice> devices) : family_(family), devices_(std::move(devices)) {}

  const std::vector<VendorDevice>& devices() const { return devices_; }
  size_t live() const { return allocations_.size(); }

  void Apply(const VendorRequest& request, const VendorPick& pick) {
    ASSERT_FALSE(pick.slots.empty());
    ASSERT_EQ(std::set<size_t>(pick.slots.begin(), pick.slots.end()).size(), pick.slots.size()) << "slot twice";
    ExpectedSize(request, pick);
    CheckShape(request, pick);
    if (!pick.cores.empty()) {
      TakeCores(pick);
    } else if (pick.memory_mib_each == 0 && pick.share_pct == 0) {
      TakeWhole(pick);
    } else {
      TakeShare(pick);
    }
    allocations_.push_back(pick);
    CheckKunlunHandles();
  }

  void ReleaseAt(size_t which) {
    const VendorPick pick = allocations_[which];
    allocations_.erase(allocations_.begin() + static_cast<std::ptrdiff_t>(which));
    if (!pick.cores.empty()) {
      for (uint32_t core : pick.cores) {
        auto& d = devices_[core / devices_[0].cores];
        d.cores_used[core % d.cores] = false;
      }
      for (size_t slot : pick.slots) --devices_[slot].tenants;
    } else if (pick.memory_mib_each == 0 && pick.share_pct == 0) {
      for (size_t slot : pick.slots) devices_[slot].free = true;
    } else {
      for (size_t slot : pick.slots) {
        auto& d = devices_[slot];
        --d.tenants;
        d.memory_used_mib -= pick.memory_mib_each;
        d.compute_used_pct -= pick.share_pct;
        if (d.tenants == 0) slice_of_.erase(slot);
      }
    }
  }

 private:
  static bool WholeFree(const VendorDevice& d) {
    return d.free && d.tenants == 0 && d.memory_used_mib == 0 && d.compute_used_pct == 0 &&
           std::none_of(d.cores_used.begin(), d.cores_used.end(), [](bool used) { return used; });
  }

  void ExpectedSize(const VendorRequest& request, const VendorPick& pick) {
    const uint32_t per_device = devices_[0].cores;
    if (request.cores == 0) {
      ASSERT_EQ(pick.slots.size(), request.count);
    } else if (request.cores <= per_device) {
      ASSERT_EQ(pick.slots.size(), 1u);
      ASSERT_EQ(pick.cores.size(), request.cores);
    } else {
      ASSERT_EQ(pick.slots.size(), request.cores / per_device);
      ASSERT_EQ(pick.cores.size(), request.cores);
    }
  }

  std::vector<uint32_t> Indices(const VendorPick& pick) const {
    std::vector<uint32_t> out;
    for (size_t slot : pick.slots) out.push_back(devices_[slot].index);
    return out;
  }

  static bool Contiguous(const std::vector<uint32_t>& indices) {
    for (size_t i = 1; i < indices.size(); ++i) {
      if (indices[i] != indices[i - 1] + 1) return false;
    }
    return true;
  }

  void CheckShape(const VendorRequest& request, const VendorPick& pick) const {
    const auto idx = Indices(pick);
    const size_t n = idx.size();
    auto same_group = [&](uint32_t size) {
      return std::all_of(idx.begin(), idx.end(), [&](uint32_t i) { return i / size == idx[0] / size; });
    };
    switch (family_) {
      case F::kAscend910:
        ASSERT_TRUE(n > 4 || same_group(4)) << "Ascend 910 task crosses HCCS rings";
        ASSERT_TRUE(n != 8 || idx == (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
        break;
      case F::kAscend910B:
        ASSERT_TRUE(devices_.size() != 16 || n > 8 || same_group(8)) << "910B task crosses HCCS halves";
        break;
      case F::kAscend910C:
        for (size_t i = 0; n % 2 == 0 && i < n; i += 2) {
          ASSERT_TRUE(idx[i] % 2 == 0 && idx[i + 1] == idx[i] + 1) << "split module";
        }
        break;
      case F::kKunlun:
        if (n <= 4) {
          const bool one_wing = same_group(4);
          const bool cross = (n == 2 && idx[1] == idx[0] + 4) || n == 4;  // the 4-sets are all mirror pairs
          ASSERT_TRUE(one_wing || cross) << "Kunlun set outside a wing or link set";
          ASSERT_TRUE(n != 4 || one_wing || (idx[2] == idx[0] + 4 && idx[3] == idx[1] + 4));
        }
        break;
      case F::kNeuron:
        if (request.cores == 0 || request.cores > devices_[0].cores) {
          ASSERT_TRUE(Contiguous(idx)) << "Trainium block not contiguous";
          ASSERT_TRUE(n == devices_.size() || idx[0] % n == 0) << "Trainium block misaligned";
        } else {
          ASSERT_TRUE(Contiguous(pick.cores)) << "cores not contiguous";
        }
        break;
      case F::kNeuronRing:
        ASSERT_TRUE(Contiguous(idx)) << "Inferentia run not contiguous";
        ASSERT_TRUE(request.cores == 0 || request.cores > devices_[0].cores || Contiguous(pick.cores));
        break;
      case F::kEnflame:
        if (pick.share_pct > 0) {
          const uint32_t slices = devices_[0].slices != 0 ? devices_[0].slices : 100;
          bool on_grid = false;
          for (uint32_t k = 1; k <= slices; ++k) on_grid |= pick.share_pct == 100 * k / slices;
          ASSERT_TRUE(on_grid) << "Enflame share off the slice grid: " << pick.share_pct;
        }
        break;
      default:
        break;
    }
  }

  void TakeWhole(const VendorPick& pick) {
    for (size_t slot : pick.slots) {
      ASSERT_TRUE(WholeFree(devices_[slot])) << "whole pick on a used device " << slot;
      devices_[slot].free = false;
    }
  }

  void TakeShare(const VendorPick& pick) {
    for (size_t slot : pick.slots) {
      auto& d = devices_[slot];
      ASSERT_TRUE(d.free) << "share on a device held whole";
      ++d.tenants;
      d.memory_used_mib += pick.memory_mib_each;
      d.compute_used_pct += pick.share_pct;
      ASSERT_LE(d.memory_used_mib, d.memory_mib) << "memory over-committed on " << slot;
      ASSERT_LE(d.compute_used_pct, 100u) << "compute over-committed on " << slot;
      if (family_ == F::kKunlun) {
        auto [it, fresh] = slice_of_.emplace(slot, pick.memory_mib_each);
        ASSERT_TRUE(fresh || it->second == pick.memory_mib_each) << "Kunlun device mixes slice sizes";
      }
    }
  }

  void TakeCores(const VendorPick& pick) {
    const uint32_t per_device = devices_[0].cores;
    std::set<size_t> touched;
    for (uint32_t core : pick.cores) {
      auto& d = devices_[core / per_device];
      ASSERT_TRUE(d.free) << "cores on a device held whole";
      d.cores_used.resize(d.cores, false);
      ASSERT_FALSE(d.cores_used[core % per_device]) << "core " << core << " given twice";
      d.cores_used[core % per_device] = true;
      touched.insert(d.slot);
    }
    ASSERT_EQ(touched, std::set<size_t>(pick.slots.begin(), pick.slots.end()));
    for (size_t slot : touched) ++devices_[slot].tenants;
  }

  void CheckKunlunHandles() const {
    if (family_ != F::kKunlun) return;
    size_t handles = devices_.size();
    for (const auto& [slot, slice] : slice_of_) handles += devices_[slot].memory_mib / slice;
    ASSERT_LE(handles, 32u) << "Kunlun driver handles over the limit";
  }

  DeviceFamily family_;
  std::vector<VendorDevice> devices_;
  std::vector<VendorPick> allocations_;
  std::map<size_t, uint64_t> slice_of_;  // Kunlun: slice memory of a split device
};

VendorRequest RandomRequest(DeviceFamily family, topology::Lcg& rng, uint32_t node_devices) {
  auto pick_of = [&](std::initializer_list<uint32_t> values) {
    return *(values.begin() + static_cast<std::ptrdiff_t>(rng.Below(values.size())));
  };
  VendorRequest r;
  switch (family) {
    case F::kAscend910:
      r.count = pick_of({1, 1, 2, 2, 3, 4, 8});
      if (r.count == 1 && rng.Percent(30)) r.memory_mib = 1024 * (1 + rng.Below(16));
      break;
    case F::kAscend910B:
    case F::kAscend910C:
      r.count = pick_of({1, 1, 2, 2, 3, 4, 6, 8, 16});
      break;
    case F::kKunlun:
      r.count = pick_of({1, 1, 1, 2, 2, 4, 8});
      if (rng.Percent(60)) r.memory_mib = 1 + rng.Below(70000);
      if (rng.Percent(20)) r.compute_pct = 1 + static_cast<uint32_t>(rng.Below(100));
      break;
    case F::kNeuron:
    case F::kNeuronRing:
      if (rng.Percent(50)) {
        r.cores = pick_of({1, 1, 2, 3, 4, 6, 8});
      } else {
        r.count = pick_of({1, 1, 2, 3, 4, 8, 16});
      }
      break;
    case F::kMetax:
      r.count = pick_of({1, 1, 2, 3, 4});
      if (rng.Percent(50)) {
        r.memory_mib = 1024 * (1 + rng.Below(24));
        r.compute_pct = static_cast<uint32_t>(rng.Below(60));
      }
      break;
    case F::kEnflame:
      r.count = pick_of({1, 1, 1, 2, 3});
      if (r.count == 1 && rng.Percent(70)) r.compute_pct = 1 + static_cast<uint32_t>(rng.Below(60));
      break;
    default:
      r.count = 1;
  }
  r.node_devices = node_devices;
  return r;
}

std::vector<VendorDevice> RandomNode(DeviceFamily family, topology::Lcg& rng) {
  switch (family) {
    case F::kAscend910:
      return Node(8);
    case F::kAscend910B:
      return Node(rng.Percent(50) ? 8 : 16);
    case F::kAscend910C:
      return Node(16);
    case F::kKunlun:
      return Node(8, kP800);
    case F::kNeuron:
      return Node(16).Cores(rng.Percent(50) ? 2 : 8);
    case F::kNeuronRing:
      return Node(12).Cores(2);
    case F::kMetax: {
      Node node(8, 65536);
      std::vector<int32_t> zones;
      for (int i = 0; i < 8; ++i) zones.push_back(static_cast<int32_t>(rng.Below(3)));
      return node.Groups(zones);
    }
    case F::kEnflame:
      return Node(4, 49152).Slices(std::vector<uint32_t>{0, 4, 6, 100}[rng.Below(4)]);
    default:
      return Node(4);
  }
}

TEST(VendorRulesPropertyTest, RandomPicksNeverOverCommitOrBreakTheRules) {
  const std::vector<DeviceFamily> families = {F::kAscend910, F::kAscend910B, F::kAscend910C, F::kKunlun,
                                              F::kNeuron,    F::kNeuronRing,  F::kMetax,      F::kEnflame};
  topology::Lcg rng(20240611);
  size_t picks = 0;
  for (int round = 0; round < 400; ++round) {
    const DeviceFamily family = families[rng.Below(families.size())];
    Simulation sim(family, RandomNode(family, rng));
    const auto node_devices = static_cast<uint32_t>(sim.devices().size());
    for (int step = 0; step < 40; ++step) {
      if (sim.live() > 0 && rng.Percent(30)) {
        sim.ReleaseAt(rng.Below(sim.live()));
        continue;
      }
      const VendorRequest request = RandomRequest(family, rng, node_devices);
      std::string why;
      auto pick = PickVendorDevices(family, sim.devices(), request, &why);
      if (CheckVendorRequest(family, request)) {
        ASSERT_FALSE(pick) << "an invalid request was placed";
        continue;
      }
      if (!pick) {
        ASSERT_FALSE(why.empty()) << "a refusal without a reason";
        continue;
      }
      ++picks;
      sim.Apply(request, *pick);
      if (::testing::Test::HasFatalFailure()) {
        FAIL() << FamilyName(family) << " round " << round << " step " << step;
      }
    }
  }
  EXPECT_GT(picks, 2000u);  // the walk really exercised the rules
}

}  // namespace
}  // namespace gpool::scheduler
