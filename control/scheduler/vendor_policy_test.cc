// The job's gpu_policy in the vendor rules (vendor_rules.h): for every family
// with shares, spread and binpack choose different devices on one node state
// and default is today's pick; whole-device picks ignore the policy; and on
// random states spread always takes a device with the most room left, never
// one that breaks Kunlun's one-slice-size or 32-handle rules.
//
// Names here are distinct from vendor_rules_test.cc's: CI builds this target
// as a unity build, where both files' anonymous namespaces are one.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <tuple>

#include "control/scheduler/vendor_rules.h"
#include "topology/lcg.h"

namespace gpool::scheduler {
namespace {

constexpr uint64_t kPolicyP800Mib = 98304;
constexpr uint64_t kPolicyQuarterMib = kPolicyP800Mib / 4;
constexpr uint64_t kPolicyHalfMib = kPolicyP800Mib / 2;
constexpr PlacementPolicy kAllPolicies[] = {PlacementPolicy::kDefault, PlacementPolicy::kBinpack,
                                            PlacementPolicy::kSpread};

std::vector<VendorDevice> PolicyDevices(uint32_t n, uint64_t memory_mib) {
  std::vector<VendorDevice> devices;
  for (uint32_t i = 0; i < n; ++i) devices.push_back(VendorDevice{.slot = i, .index = i, .memory_mib = memory_mib});
  return devices;
}

void SharedBy(std::vector<VendorDevice>& devices, uint32_t i, uint32_t tenants, uint64_t memory, uint32_t compute) {
  devices[i].tenants = tenants;
  devices[i].memory_used_mib = memory;
  devices[i].compute_used_pct = compute;
}

// A Kunlun device split in 1/parts slices, `tenants` of them in use.
void SplitBy(std::vector<VendorDevice>& devices, uint32_t i, uint32_t parts, uint32_t tenants) {
  SharedBy(devices, i, tenants, tenants * (kPolicyP800Mib / parts), tenants * (100 / parts));
}

VendorRequest WithPolicy(VendorRequest request, PlacementPolicy policy) {
  request.gpu_policy = policy;
  return request;
}

// The slots picked, or empty with the refusal reported as a failure.
std::vector<size_t> SlotsUnder(DeviceFamily family, const std::vector<VendorDevice>& devices,
                               const VendorRequest& request, PlacementPolicy policy) {
  std::string why;
  auto pick = PickVendorDevices(family, devices, WithPolicy(request, policy), &why);
  EXPECT_TRUE(pick) << FamilyName(family) << " " << ToString(policy) << ": " << why;
  return pick ? pick->slots : std::vector<size_t>{};
}

// Default is today's pick (`packed`), binpack the same, spread `spread`.
void ExpectPicks(DeviceFamily family, const std::vector<VendorDevice>& devices, const VendorRequest& request,
                 const std::vector<size_t>& packed, const std::vector<size_t>& spread) {
  ASSERT_NE(packed, spread) << "the case must tell the policies apart";
  EXPECT_EQ(SlotsUnder(family, devices, request, PlacementPolicy::kDefault), packed) << FamilyName(family);
  EXPECT_EQ(SlotsUnder(family, devices, request, PlacementPolicy::kBinpack), packed) << FamilyName(family);
  EXPECT_EQ(SlotsUnder(family, devices, request, PlacementPolicy::kSpread), spread) << FamilyName(family);
}

TEST(VendorPolicyTest, KunlunSpreadSplitsAWholeDeviceOfTheOddWingAndBinpackPacksTheSplitOne) {
  auto devices = PolicyDevices(8, kPolicyP800Mib);
  SplitBy(devices, 4, 4, 1);  // wing 1 keeps 3 whole devices, wing 0 all 4
  const VendorRequest quarter{.count = 1, .memory_mib = 10000};
  ExpectPicks(DeviceFamily::kKunlun, devices, quarter, {4}, {5});
  auto pick = PickVendorDevices(DeviceFamily::kKunlun, devices, WithPolicy(quarter, PlacementPolicy::kSpread), nullptr);
  ASSERT_TRUE(pick);
  EXPECT_EQ(pick->memory_mib_each, kPolicyQuarterMib);
  EXPECT_EQ(pick->share_pct, 25u);
}

// 8 handles for the devices, 5 x 4 for the quarter-split ones, 2 for the
// half-split one: 30, so splitting device 6 or 7 in quarters (34) is over
// the limit and spread takes the least-used quarter device instead; device
// 4, the least used of all, holds halves and takes no quarter. A half still
// splits a whole device (32).
TEST(VendorPolicyTest, KunlunSpreadKeepsOneSliceSizePerDeviceAndTheHandleLimit) {
  auto devices = PolicyDevices(8, kPolicyP800Mib);
  for (uint32_t i : {0u, 1u, 3u, 5u}) SplitBy(devices, i, 4, 3);
  SplitBy(devices, 2, 4, 2);
  SplitBy(devices, 4, 2, 1);
  ExpectPicks(DeviceFamily::kKunlun, devices, VendorRequest{.count = 1, .memory_mib = kPolicyQuarterMib}, {0}, {2});
  ExpectPicks(DeviceFamily::kKunlun, devices, VendorRequest{.count = 1, .memory_mib = kPolicyHalfMib}, {4}, {6});
}

// A GCU share bounds compute and memory together: binpack takes the most
// used GCU that holds 25%, spread the least used (device 3 is held whole).
TEST(VendorPolicyTest, EnflameSpreadTakesTheLeastUsedGcuAndBinpackTheMostUsed) {
  auto devices = PolicyDevices(4, 49152);
  SharedBy(devices, 0, 2, 49152 * 60 / 100, 60);
  SharedBy(devices, 1, 1, 49152 * 50 / 100, 50);
  SharedBy(devices, 2, 1, 49152 * 20 / 100, 20);
  devices[3].free = false;
  ExpectPicks(DeviceFamily::kEnflame, devices, VendorRequest{.count = 1, .compute_pct = 25}, {0}, {2});
  devices[3].free = true;  // an idle GCU has the most room of all
  ExpectPicks(DeviceFamily::kEnflame, devices, VendorRequest{.count = 1, .compute_pct = 25}, {0}, {3});
}

TEST(VendorPolicyTest, MetaxSpreadTakesTheDevicesWithMostRoomAndBinpackTheFullest) {
  auto devices = PolicyDevices(4, 65536);
  SharedBy(devices, 0, 1, 40960, 30);
  SharedBy(devices, 1, 1, 10240, 10);
  const VendorRequest one{.count = 1, .memory_mib = 8192, .compute_pct = 10};
  ExpectPicks(DeviceFamily::kMetax, devices, one, {0}, {2});
  VendorRequest two = one;
  two.count = 2;
  ExpectPicks(DeviceFamily::kMetax, devices, two, {0, 1}, {2, 3});
  devices[2].free = devices[3].free = false;  // among shared devices too
  ExpectPicks(DeviceFamily::kMetax, devices, one, {0}, {1});
}

// vNPU shares are one chip on every Ascend generation; the others are held whole.
TEST(VendorPolicyTest, AscendVnpuSpreadTakesTheChipWithMostRoomAndBinpackTheFullest) {
  for (const auto family : {DeviceFamily::kAscend910, DeviceFamily::kAscend910B, DeviceFamily::kAscend910C}) {
    auto devices = PolicyDevices(family == DeviceFamily::kAscend910C ? 16 : 8, 65536);
    for (auto& d : devices) d.free = false;
    devices[0].free = devices[3].free = true;
    SharedBy(devices, 0, 1, 32768, 0);
    SharedBy(devices, 3, 1, 16384, 0);
    ExpectPicks(family, devices, VendorRequest{.count = 1, .memory_mib = 8192}, {0}, {3});
  }
}

// Whole devices (rings, halves, modules, wings, blocks, zones), Kunlun
// slices on several devices and Neuron cores keep their topology rules:
// every policy picks the same on random states.
TEST(VendorPolicyTest, WholeDevicePicksAndMultiDeviceSlicesIgnoreThePolicy) {
  struct WholeCase {
    DeviceFamily family;
    uint32_t devices;
    VendorRequest request;
  };
  const std::vector<WholeCase> cases = {
      {DeviceFamily::kAscend910, 8, {.count = 1}},        {DeviceFamily::kAscend910, 8, {.count = 2}},
      {DeviceFamily::kAscend910B, 16, {.count = 4}},      {DeviceFamily::kAscend910C, 16, {.count = 1}},
      {DeviceFamily::kKunlun, 8, {.count = 1}},           {DeviceFamily::kKunlun, 8, {.count = 2}},
      {DeviceFamily::kKunlun, 8, {.count = 2, .memory_mib = 20000}},
      {DeviceFamily::kNeuron, 16, {.count = 4}},          {DeviceFamily::kNeuronRing, 12, {.count = 3}},
      {DeviceFamily::kNeuron, 16, {.cores = 1}},          {DeviceFamily::kMetax, 8, {.count = 2}},
      {DeviceFamily::kEnflame, 4, {.count = 2}},
  };
  topology::Lcg rng(50);
  size_t picked = 0;
  for (int round = 0; round < 60; ++round) {
    for (const auto& c : cases) {
      auto devices = PolicyDevices(c.devices, c.family == DeviceFamily::kKunlun ? kPolicyP800Mib : 65536);
      for (auto& d : devices) {
        d.free = !rng.Percent(35);
        d.link_group = c.family == DeviceFamily::kMetax ? static_cast<int32_t>(rng.Below(3)) : -1;
        d.cores = c.family == DeviceFamily::kNeuron ? 2 : 0;
      }
      if (c.family == DeviceFamily::kKunlun && rng.Percent(50)) SplitBy(devices, 1 + rng.Below(6), 4, 1);
      std::optional<std::vector<size_t>> first;
      for (const auto policy : kAllPolicies) {
        auto pick = PickVendorDevices(c.family, devices, WithPolicy(c.request, policy), nullptr);
        const std::vector<size_t> slots = pick ? pick->slots : std::vector<size_t>{};
        if (!first) first = slots;
        EXPECT_EQ(slots, *first) << FamilyName(c.family) << " round " << round << " " << ToString(policy);
      }
      picked += first->empty() ? 0 : 1;
    }
  }
  EXPECT_GT(picked, 300u);  // most states had room: the comparison was not over refusals
}

// Random shared states: default and binpack always agree, and spread's
// device has, by an oracle written apart from the rules, the most room of
// every device that takes the share.
TEST(VendorPolicyTest, RandomSpreadSharesTakeADeviceWithTheMostRoom) {
  topology::Lcg rng(5050);
  size_t spread_picks = 0;
  for (int round = 0; round < 600; ++round) {
    const DeviceFamily family = std::vector<DeviceFamily>{DeviceFamily::kMetax, DeviceFamily::kAscend910B,
                                                          DeviceFamily::kEnflame}[rng.Below(3)];
    auto devices = PolicyDevices(family == DeviceFamily::kEnflame ? 4 : 8, 65536);
    for (auto& d : devices) {
      if (rng.Percent(20)) d.free = false;
      if (d.free && rng.Percent(60)) {
        const auto compute = static_cast<uint32_t>(rng.Below(90));
        SharedBy(devices, d.index, 1 + static_cast<uint32_t>(rng.Below(3)),
                 family == DeviceFamily::kEnflame ? 65536 * compute / 100 : 1024 * rng.Below(60), compute);
      }
    }
    VendorRequest request{.count = 1, .compute_pct = static_cast<uint32_t>(1 + rng.Below(40))};
    if (family != DeviceFamily::kEnflame) request.memory_mib = 1024 * (1 + rng.Below(30));
    const auto packed = PickVendorDevices(family, devices, WithPolicy(request, PlacementPolicy::kDefault), nullptr);
    const auto binpacked = PickVendorDevices(family, devices, WithPolicy(request, PlacementPolicy::kBinpack), nullptr);
    ASSERT_EQ(packed.has_value(), binpacked.has_value());
    if (packed) {
      EXPECT_EQ(packed->slots, binpacked->slots) << FamilyName(family) << " round " << round;
    }
    const auto spread = PickVendorDevices(family, devices, WithPolicy(request, PlacementPolicy::kSpread), nullptr);
    ASSERT_EQ(spread.has_value(), packed.has_value()) << "a policy changed whether the share fits";
    if (!spread) continue;
    ++spread_picks;
    // Room as the user sees it: memory then compute left (Enflame: compute
    // in use, which bounds its memory too).
    auto room = [&](const VendorDevice& d) {
      return family == DeviceFamily::kEnflame ? std::make_tuple(uint64_t{100 - d.compute_used_pct}, uint64_t{0})
                                              : std::make_tuple(d.memory_mib - d.memory_used_mib,
                                                                uint64_t{100 - d.compute_used_pct});
    };
    auto takes = [&](const VendorDevice& d) {
      const uint64_t memory = family == DeviceFamily::kEnflame ? d.memory_mib * request.compute_pct / 100
                                                               : request.memory_mib;
      return d.free && d.memory_used_mib + memory <= d.memory_mib && d.compute_used_pct + request.compute_pct <= 100;
    };
    ASSERT_EQ(spread->slots.size(), 1u);
    const VendorDevice& chosen = devices[spread->slots[0]];
    ASSERT_TRUE(takes(chosen)) << FamilyName(family) << " round " << round;
    for (const auto& d : devices) {
      if (takes(d)) {
        EXPECT_LE(room(d), room(chosen)) << FamilyName(family) << " round " << round << " device " << d.index;
      }
    }
  }
  EXPECT_GT(spread_picks, 400u);
}

// Random Kunlun states: a spread slice goes to a device that holds slices of
// its size (or none), never past 32 handles, and passes over an unsplit
// device only when splitting it would pass the limit.
TEST(VendorPolicyTest, RandomKunlunSpreadSlicesKeepTheSliceAndHandleRules) {
  topology::Lcg rng(505);
  size_t picks = 0;
  for (int round = 0; round < 600; ++round) {
    auto devices = PolicyDevices(8, kPolicyP800Mib);
    uint32_t handles = 8;
    for (auto& d : devices) {
      if (rng.Percent(15)) {
        d.free = false;
      } else if (rng.Percent(60)) {
        const uint32_t parts = rng.Percent(50) ? 4 : 2;
        if (handles + parts > 32) continue;  // a state the driver could be in
        handles += parts;
        SplitBy(devices, d.index, parts, 1 + static_cast<uint32_t>(rng.Below(parts)));
      }
    }
    const uint32_t parts = rng.Percent(50) ? 4 : 2;
    const VendorRequest request{.count = 1, .memory_mib = kPolicyP800Mib / parts};
    auto pick =
        PickVendorDevices(DeviceFamily::kKunlun, devices, WithPolicy(request, PlacementPolicy::kSpread), nullptr);
    if (!pick) continue;
    ++picks;
    const VendorDevice& chosen = devices[pick->slots.at(0)];
    const bool unsplit = chosen.tenants == 0;
    if (!unsplit) {
      EXPECT_EQ(chosen.memory_used_mib / chosen.tenants, kPolicyP800Mib / parts) << "round " << round;
      EXPECT_LT(chosen.tenants, parts) << "round " << round;
    }
    EXPECT_LE(handles + (unsplit ? parts : 0), 32u) << "round " << round;
    for (const auto& d : devices) {
      const bool whole_free = d.free && d.tenants == 0;
      if (whole_free && !unsplit) {
        EXPECT_GT(handles + parts, 32u) << "round " << round << " passed over " << d.index;
      }
      const bool same_size = d.tenants > 0 && d.memory_used_mib / d.tenants == kPolicyP800Mib / parts;
      if (same_size && d.tenants < parts && !unsplit) {
        EXPECT_GE(d.tenants, chosen.tenants) << "round " << round;
      }
    }
  }
  EXPECT_GT(picks, 400u);
}

}  // namespace
}  // namespace gpool::scheduler
