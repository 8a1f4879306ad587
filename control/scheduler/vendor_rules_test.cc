#include "control/scheduler/vendor_rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "topology/lcg.h"

namespace gpool::scheduler {
namespace {

constexpr uint64_t kP800 = 98304;

// A node's devices, slot == index, built up row by row in the tables.
class Node {
 public:
  explicit Node(uint32_t n, uint64_t memory_mib = 65536) {
    for (uint32_t i = 0; i < n; ++i) devices_.push_back(VendorDevice{.slot = i, .index = i, .memory_mib = memory_mib});
  }
  Node& Busy(std::initializer_list<uint32_t> held_whole) {
    for (uint32_t i : held_whole) devices_[i].free = false;
    return *this;
  }
  Node& Shared(uint32_t i, uint32_t tenants, uint64_t memory_used_mib, uint32_t compute_used_pct) {
    devices_[i].tenants = tenants;
    devices_[i].memory_used_mib = memory_used_mib;
    devices_[i].compute_used_pct = compute_used_pct;
    return *this;
  }
  Node& Groups(const std::vector<int32_t>& groups) {
    for (size_t i = 0; i < groups.size(); ++i) devices_[i].link_group = groups[i];
    return *this;
  }
  Node& Cores(uint32_t per_device) {
    for (auto& d : devices_) d.cores = per_device;
    return *this;
  }
  Node& CoresUsed(uint32_t i, std::initializer_list<uint32_t> cores) {
    devices_[i].cores_used.assign(devices_[i].cores, false);
    for (uint32_t c : cores) devices_[i].cores_used[c] = true;
    devices_[i].tenants = 1;
    return *this;
  }
  Node& Slices(uint32_t slices) {
    for (auto& d : devices_) d.slices = slices;
    return *this;
  }
  operator std::vector<VendorDevice>() const { return devices_; }  // NOLINT: builder

 private:
  std::vector<VendorDevice> devices_;
};

struct Case {
  const char* name;
  DeviceFamily family;
  std::vector<VendorDevice> devices;
  VendorRequest request;
  std::vector<size_t> expected;  // empty: refused
  std::string refusal = "";      // part of `why` when refused
  uint64_t memory_each = 0;      // resolved per-device memory, 0: whole devices
  std::vector<uint32_t> cores = {};
  std::optional<int64_t> score = std::nullopt;
};

class VendorRulesTableTest : public ::testing::TestWithParam<Case> {};

TEST_P(VendorRulesTableTest, PicksTheExpectedDevices) {
  const Case& c = GetParam();
  std::string why;
  auto pick = PickVendorDevices(c.family, c.devices, c.request, &why);
  if (c.expected.empty()) {
    ASSERT_FALSE(pick) << "picked " << ::testing::PrintToString(pick->slots);
    EXPECT_NE(why.find(c.refusal), std::string::npos) << why;
    return;
  }
  ASSERT_TRUE(pick) << why;
  EXPECT_EQ(pick->slots, c.expected);
  EXPECT_EQ(pick->memory_mib_each, c.memory_each);
  EXPECT_EQ(pick->cores, c.cores);
  EXPECT_EQ(pick->score, c.score.value_or(pick->score));
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

using F = DeviceFamily;

// Ascend 910: rings 0-3 and 4-7; 1 prefers a ring with 1, 3, 2, 4 free; 2
// prefers 2, 4, 3; 4 needs a whole ring; 8 both.
INSTANTIATE_TEST_SUITE_P(
    Ascend910, VendorRulesTableTest,
    ::testing::Values(
        Case{"OneGoesToTheRingWithOneFree", F::kAscend910, Node(8).Busy({0, 1, 2}), {.count = 1}, {3}},
        Case{"OnePrefersThreeFreeOverTwo", F::kAscend910, Node(8).Busy({0, 4, 5}), {.count = 1}, {1}},
        Case{"OnePrefersTwoFreeOverFour", F::kAscend910, Node(8).Busy({4, 5}), {.count = 1}, {6}},
        Case{"TwoFillARingWithTwoFree", F::kAscend910, Node(8).Busy({0, 1}), {.count = 2}, {2, 3}},
        Case{"TwoPreferAWholeRingOverThreeFree", F::kAscend910, Node(8).Busy({0}), {.count = 2}, {4, 5}},
        Case{"TwoTakeThreeFreeWhenNothingBetter", F::kAscend910, Node(8).Busy({0, 4, 5, 6}), {.count = 2}, {1, 2}},
        Case{"FourTakeTheWholeRing", F::kAscend910, Node(8).Busy({0}), {.count = 4}, {4, 5, 6, 7}},
        Case{"FourRefusedWhenBothRingsAreBroken", F::kAscend910, Node(8).Busy({0, 4}), {.count = 4}, {},
             "no HCCS ring with 4 free chips"},
        Case{"TwoNeverSpanRings", F::kAscend910, Node(8).Busy({0, 1, 2, 4, 5, 6}), {.count = 2}, {},
             "no HCCS ring with 2"},
        Case{"EightTakeBothRings", F::kAscend910, Node(8), {.count = 8}, {0, 1, 2, 3, 4, 5, 6, 7}},
        Case{"EightRefusedWhenAChipIsBusy", F::kAscend910, Node(8).Busy({7}), {.count = 8}, {},
             "wholly free HCCS rings"},
        Case{"ThreeIsNotAnAscend910Count", F::kAscend910, Node(8), {.count = 3}, {}, "1, 2, 4 or 8 per task, not 3"},
        Case{"ReportedRingsOverrideTheIndex", F::kAscend910, Node(8).Groups({0, 1, 0, 1, 0, 1, 0, 1}).Busy({0}),
             {.count = 4}, {1, 3, 5, 7}},
        Case{"AShareGoesToAChipAlreadyShared", F::kAscend910, Node(8).Shared(5, 1, 8192, 0),
             {.count = 1, .memory_mib = 4096}, {5}, "", 4096},
        Case{"AShareOnTwoChipsIsRefused", F::kAscend910, Node(8), {.count = 2, .memory_mib = 4096}, {},
             "one chip per task"}),
    CaseName);

// Ascend 910B: 8-chip A2 is a full mesh; 16-chip has halves 0-7 / 8-15.
INSTANTIATE_TEST_SUITE_P(
    Ascend910B, VendorRulesTableTest,
    ::testing::Values(
        Case{"ThreeChipsAreFineOnA2", F::kAscend910B, Node(8).Busy({0}), {.count = 3}, {1, 2, 3}},
        Case{"SevenChipsSpanTheMesh", F::kAscend910B, Node(8).Busy({3}), {.count = 7}, {0, 1, 2, 4, 5, 6, 7}},
        Case{"ReportedGroupsAreBestFit", F::kAscend910B, Node(8).Groups({0, 0, 0, 0, 1, 1, 1, 1}).Busy({0, 1}),
             {.count = 2}, {2, 3}},
        Case{"ReportedGroupsSpanWhenTheyMust", F::kAscend910B, Node(8).Groups({0, 0, 0, 0, 1, 1, 1, 1}).Busy({0, 1}),
             {.count = 5}, {2, 4, 5, 6, 7}},
        Case{"TooFewFreeChipsOnA2", F::kAscend910B, Node(8).Busy({0, 1, 2, 3, 4}), {.count = 4}, {}, "3 free chips"},
        Case{"SixteenChipTwoFillTheFullerHalf", F::kAscend910B, Node(16).Busy({0, 1, 2, 3, 4, 5}), {.count = 2},
             {6, 7}},
        Case{"SixteenChipFourStayInOneHalf", F::kAscend910B, Node(16).Busy({0, 1, 2, 3, 4, 5}), {.count = 4},
             {8, 9, 10, 11}},
        Case{"SixteenChipEightTakeAWholeHalf", F::kAscend910B, Node(16).Busy({0}), {.count = 8},
             {8, 9, 10, 11, 12, 13, 14, 15}},
        Case{"SixteenChipThreeIsRefused", F::kAscend910B, Node(16), {.count = 3}, {},
             "1, 2, 4, 8 or 16 per task, not 3"},
        Case{"SixteenNeedTheWholeNode", F::kAscend910B, Node(16).Busy({15}), {.count = 16}, {},
             "whole 16-chip node"}),
    CaseName);

// Ascend 910C: SIO modules (2k, 2k+1).
INSTANTIATE_TEST_SUITE_P(
    Ascend910C, VendorRulesTableTest,
    ::testing::Values(
        Case{"OneDieJoinsAHalfUsedModule", F::kAscend910C, Node(16).Busy({4}), {.count = 1}, {5}},
        Case{"OneDieFromAWholeModuleOtherwise", F::kAscend910C, Node(16), {.count = 1}, {0}},
        Case{"FourDiesTakeTwoWholeModules", F::kAscend910C, Node(16).Busy({1}), {.count = 4}, {2, 3, 4, 5}},
        Case{"OddCountIsRefused", F::kAscend910C, Node(16), {.count = 3}, {}, "1 or an even count"},
        Case{"TwoRefusedWithoutAWholeModule", F::kAscend910C,
             Node(16).Busy({0, 2, 4, 6, 8, 10, 12, 14}), {.count = 2}, {}, "wholly free SIO modules"}),
    CaseName);

// Kunlun P800: wings 0-3 / 4-7, cross links, quarter/half slices, 32 handles.
INSTANTIATE_TEST_SUITE_P(
    Kunlun, VendorRulesTableTest,
    ::testing::Values(
        Case{"OneGoesToTheWingWithOneFree", F::kKunlun, Node(8, kP800).Busy({0, 1, 2}), {.count = 1}, {3}},
        Case{"OnePrefersThreeFreeOverTwo", F::kKunlun, Node(8, kP800).Busy({0, 4, 5}), {.count = 1}, {1}},
        Case{"TwoFillAWingWithTwoFree", F::kKunlun, Node(8, kP800).Busy({0, 1}), {.count = 2}, {2, 3}},
        Case{"TwoPreferThreeFreeOverFour", F::kKunlun, Node(8, kP800).Busy({0}), {.count = 2}, {1, 2}},
        Case{"TwoUseACrossWingLink", F::kKunlun, Node(8, kP800).Busy({1, 2, 3, 5, 6, 7}), {.count = 2}, {0, 4}},
        Case{"TwoRefusedWithoutALink", F::kKunlun, Node(8, kP800).Busy({0, 1, 2, 5, 6, 7}), {.count = 2}, {},
             "no wing or cross-wing link set"},
        Case{"FourTakeAWholeWing", F::kKunlun, Node(8, kP800).Busy({0}), {.count = 4}, {4, 5, 6, 7}},
        Case{"FourUseACrossWingSet", F::kKunlun, Node(8, kP800).Busy({2, 3, 6, 7}), {.count = 4}, {0, 1, 4, 5}},
        Case{"ThreeIsNotAKunlunCount", F::kKunlun, Node(8, kP800), {.count = 3}, {}, "1, 2, 4 or 8 per task, not 3"},
        Case{"SmallMemoryRoundsUpToAQuarter", F::kKunlun, Node(8, kP800), {.count = 1, .memory_mib = 10000}, {0}, "",
             24576},
        Case{"AQuarterPacksOntoASplitDevice", F::kKunlun, Node(8, kP800).Shared(5, 1, 24576, 25),
             {.count = 1, .memory_mib = 24576}, {5}, "", 24576},
        Case{"AHalfSkipsADeviceCutInQuarters", F::kKunlun, Node(8, kP800).Shared(0, 1, 24576, 25),
             {.count = 1, .memory_mib = 30000}, {1}, "", 49152},
        Case{"MoreThanHalfIsAWholeDevice", F::kKunlun, Node(8, kP800).Shared(0, 1, 24576, 25),
             {.count = 1, .memory_mib = 60000}, {1}},
        Case{"EightHalvesFitTheHandles", F::kKunlun, Node(8, kP800), {.count = 8, .memory_mib = 49152},
             {0, 1, 2, 3, 4, 5, 6, 7}, "", 49152},
        Case{"EightQuartersNeedFortyHandles", F::kKunlun, Node(8, kP800), {.count = 8, .memory_mib = 24576}, {},
             "need 40 driver handles"},
        Case{"AQuarterStillFitsOnSplitDevicesAtTheLimit", F::kKunlun,
             Node(8, kP800).Shared(0, 1, 24576, 25).Shared(1, 1, 24576, 25).Shared(2, 1, 24576, 25)
                 .Shared(3, 1, 24576, 25).Shared(4, 1, 24576, 25).Shared(5, 3, 73728, 75),
             {.count = 1, .memory_mib = 24576}, {5}, "", 24576},
        Case{"AHalfWouldPassTheHandleLimit", F::kKunlun,
             Node(8, kP800).Shared(0, 1, 24576, 25).Shared(1, 1, 24576, 25).Shared(2, 1, 24576, 25)
                 .Shared(3, 1, 24576, 25).Shared(4, 1, 24576, 25).Shared(5, 1, 24576, 25),
             {.count = 1, .memory_mib = 49152}, {}, "would need 34 driver handles"}),
    CaseName);

// Neuron Trainium: aligned blocks of 1/4/8/16; cores contiguous on one device.
INSTANTIATE_TEST_SUITE_P(
    NeuronTrainium, VendorRulesTableTest,
    ::testing::Values(
        Case{"FourTakeTheBlockBesideABusyOne", F::kNeuron, Node(16).Cores(2).Busy({1}), {.count = 4}, {4, 5, 6, 7}},
        Case{"FourAreNeverMisaligned", F::kNeuron, Node(16).Cores(2).Busy({0, 5, 10, 15}), {.count = 4}, {},
             "aligned block of 4"},
        Case{"TwoIsNotATrainiumCount", F::kNeuron, Node(16).Cores(2), {.count = 2}, {},
             "1, 4, 8 or 16 per task, not 2"},
        Case{"OneGoesWhereABlockIsAlreadyBroken", F::kNeuron, Node(16).Cores(2).Busy({9}), {.count = 1}, {8}},
        Case{"SixteenTakeTheNode", F::kNeuron, Node(16).Cores(2), {.count = 16},
             {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
        Case{"ACorePacksOntoAPartlyUsedDevice", F::kNeuron, Node(16).Cores(2).CoresUsed(3, {0}), {.cores = 1}, {3},
             "", 0, {7}},
        Case{"TwoCoresNeedARunOnOneDevice", F::kNeuron, Node(16).Cores(2).CoresUsed(0, {0}), {.cores = 2}, {1}, "",
             0, {2, 3}},
        Case{"EightCoresAreFourWholeDevices", F::kNeuron, Node(16).Cores(2), {.cores = 8}, {0, 1, 2, 3}, "", 0,
             {0, 1, 2, 3, 4, 5, 6, 7}},
        Case{"ThreeCoresAreRefused", F::kNeuron, Node(16).Cores(2), {.cores = 3}, {},
             "neither up to one device nor a multiple of 2"},
        Case{"Trn2CoresRunInsideOneDevice", F::kNeuron, Node(16).Cores(8).CoresUsed(0, {0, 1, 4}), {.cores = 2},
             {0}, "", 0, {2, 3}}),
    CaseName);

// Neuron Inferentia: any count, contiguous, no wrap, shortest run.
INSTANTIATE_TEST_SUITE_P(
    NeuronInferentia, VendorRulesTableTest,
    ::testing::Values(
        Case{"TwoTakeTheShortestRun", F::kNeuronRing, Node(12).Cores(2).Busy({3, 6}), {.count = 2}, {4, 5}},
        Case{"ThreeTakeAnyContiguousRun", F::kNeuronRing, Node(12).Cores(2).Busy({0}), {.count = 3}, {1, 2, 3}},
        Case{"TwoNeverSkipADevice", F::kNeuronRing, Node(12).Cores(2).Busy({1, 3, 5, 7, 9, 11}), {.count = 2}, {},
             "contiguous free devices"},
        Case{"RunsDoNotWrapAround", F::kNeuronRing, Node(12).Cores(2).Busy({2, 3, 4, 5, 6, 7, 8, 9}), {.count = 3},
             {}, "run of 3"},
        Case{"FiveIsFineOnInferentia", F::kNeuronRing, Node(12).Cores(2), {.count = 5}, {0, 1, 2, 3, 4}}),
    CaseName);

// MetaX: exclusive multi-device stays in a MetaLink zone; score 10 x allocated - loss.
INSTANTIATE_TEST_SUITE_P(
    Metax, VendorRulesTableTest,
    ::testing::Values(
        Case{"ExclusiveStaysInOneZone", F::kMetax, Node(8).Groups({1, 1, 1, 1, 2, 2, 2, 2}).Busy({0}), {.count = 2},
             {1, 2}, "", 0, {}, 80},
        Case{"ExclusiveTakesTheSmallestZoneThatHolds", F::kMetax,
             Node(8).Groups({1, 1, 1, 1, 2, 2, 2, 2}).Busy({0, 1}), {.count = 2}, {2, 3}, "", 0, {}, 100},
        Case{"ExclusiveSpansZonesSmallestFirst", F::kMetax,
             Node(8).Groups({1, 1, 1, 1, 2, 2, 2, 2}).Busy({0, 1, 4}), {.count = 4}, {2, 3, 5, 6}, "", 0, {}, 180},
        Case{"ZonelessDevicesComeLast", F::kMetax, Node(8).Groups({1, 1, 1, 1, 0, 0, 0, 0}).Busy({0}), {.count = 4},
             {1, 2, 3, 4}, "", 0, {}, 300},
        Case{"ASharePacksOntoAUsedDevice", F::kMetax, Node(8).Shared(6, 1, 8192, 30),
             {.count = 1, .memory_mib = 4096, .compute_pct = 20}, {6}, "", 4096, {}, 0},
        Case{"TooFewWholeDevices", F::kMetax, Node(8).Busy({0, 1, 2, 3, 4, 5, 6}), {.count = 2}, {},
             "1 whole devices free, 2 needed"}),
    CaseName);

// Enflame: whole GCUs, or a percentage share of one GCU at slice granularity.
INSTANTIATE_TEST_SUITE_P(
    Enflame, VendorRulesTableTest,
    ::testing::Values(
        Case{"WholeTakeTheLowestFree", F::kEnflame, Node(4, 49152).Busy({0}), {.count = 2}, {1, 2}},
        Case{"ASharePacksOntoAUsedGcu", F::kEnflame, Node(4, 49152).Shared(2, 1, 14745, 30),
             {.count = 1, .compute_pct = 22}, {2}, "", 10813},
        Case{"AShareRoundsUpToSlices", F::kEnflame, Node(4, 49152).Slices(6), {.count = 1, .compute_pct = 20}, {0},
             "", 16220},
        Case{"ShareRefusedWhenEveryGcuIsFull", F::kEnflame, Node(2, 49152).Shared(0, 3, 0, 90).Shared(1, 3, 0, 90),
             {.count = 1, .compute_pct = 20}, {}, "no GCU with room"},
        Case{"ShareOnTwoGcusIsRefused", F::kEnflame, Node(4, 49152), {.count = 2, .compute_pct = 20}, {},
             "single-device requests"},
        Case{"GenericHasNoRule", F::kGeneric, Node(4), {.count = 1}, {}, "no vendor rule"}),
    CaseName);

// ------------------------------------------------------------ FamilyOf --

struct FamilyCase {
  const char* vendor;
  const char* model;
  DeviceFamily family;
};

class FamilyOfTest : public ::testing::TestWithParam<FamilyCase> {};

TEST_P(FamilyOfTest, ReadsVendorAndModel) {
  const auto& c = GetParam();
  EXPECT_EQ(FamilyName(FamilyOf(c.vendor, c.model)), FamilyName(c.family)) << c.vendor << " / " << c.model;
}

INSTANTIATE_TEST_SUITE_P(
    Strings, FamilyOfTest,
    ::testing::Values(FamilyCase{"nvidia", "H100", F::kGeneric}, FamilyCase{"amd", "MI300X", F::kGeneric},
                      FamilyCase{"huawei", "Ascend910", F::kAscend910}, FamilyCase{"ascend", "910A", F::kAscend910},
                      FamilyCase{"huawei", "Ascend910B3", F::kAscend910B}, FamilyCase{"Ascend", "910B", F::kAscend910B},
                      FamilyCase{"huawei", "Ascend910C", F::kAscend910C},
                      FamilyCase{"huawei", "Ascend910_9391", F::kAscend910C},
                      FamilyCase{"huawei", "Ascend310P", F::kGeneric}, FamilyCase{"kunlunxin", "P800", F::kKunlun},
                      FamilyCase{"Kunlun", "P800-OAM", F::kKunlun}, FamilyCase{"aws", "trn1", F::kNeuron},
                      FamilyCase{"neuron", "trainium2", F::kNeuron}, FamilyCase{"aws", "inferentia2", F::kNeuronRing},
                      FamilyCase{"AWS", "inf2", F::kNeuronRing}, FamilyCase{"metax", "C500", F::kMetax},
                      FamilyCase{"Enflame", "S60", F::kEnflame}));

// -------------------------------------------------- CheckVendorRequest --

struct CheckCase {
  const char* name;
  DeviceFamily family;
  VendorRequest request;
  std::string error;  // "": valid
};

class CheckVendorRequestTest : public ::testing::TestWithParam<CheckCase> {};

TEST_P(CheckVendorRequestTest, NamesTheRule) {
  const auto& c = GetParam();
  auto error = CheckVendorRequest(c.family, c.request);
  if (c.error.empty()) {
    EXPECT_FALSE(error) << *error;
  } else {
    ASSERT_TRUE(error);
    EXPECT_NE(error->find(c.error), std::string::npos) << *error;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Requests, CheckVendorRequestTest,
    ::testing::Values(
        CheckCase{"NothingAsked", F::kMetax, {}, "names no devices"},
        CheckCase{"MemoryAboveAHundredPercent", F::kMetax, {.count = 1, .memory_pct = 120}, "memory share above"},
        CheckCase{"GenericIsNeverChecked", F::kGeneric, {.count = 3}, ""},
        CheckCase{"Ascend910Eight", F::kAscend910, {.count = 8, .node_devices = 8}, ""},
        CheckCase{"Ascend910Six", F::kAscend910, {.count = 6}, "not 6"},
        CheckCase{"Ascend910BFiveOnEightChips", F::kAscend910B, {.count = 5, .node_devices = 8}, ""},
        CheckCase{"Ascend910BFiveOnSixteenChips", F::kAscend910B, {.count = 5, .node_devices = 16}, "not 5"},
        CheckCase{"Ascend910BNineUnknownNode", F::kAscend910B, {.count = 9}, "not 9"},
        CheckCase{"Ascend910BMoreThanTheNode", F::kAscend910B, {.count = 16, .node_devices = 8}, "node has 8"},
        CheckCase{"Ascend910CSix", F::kAscend910C, {.count = 6, .node_devices = 16}, ""},
        CheckCase{"AscendCores", F::kAscend910B, {.cores = 2}, "no core-level"},
        CheckCase{"KunlunSixQuartersAreNotACount", F::kKunlun, {.count = 6, .memory_mib = 24576}, "not 6"},
        CheckCase{"KunlunFourQuarters", F::kKunlun, {.count = 4, .memory_mib = 24576, .node_devices = 8}, ""},
        CheckCase{"KunlunEightQuarters", F::kKunlun, {.count = 8, .memory_mib = 24576, .node_devices = 8},
                  "40 driver handles"},
        CheckCase{"KunlunEightComputeQuarters", F::kKunlun, {.count = 8, .compute_pct = 20}, "40 driver handles"},
        CheckCase{"NeuronTrainiumEight", F::kNeuron, {.count = 8, .node_devices = 16}, ""},
        CheckCase{"NeuronTrainiumSeven", F::kNeuron, {.count = 7, .node_devices = 16}, "not 7"},
        CheckCase{"NeuronTrainiumWholeSmallNode", F::kNeuron, {.count = 2, .node_devices = 2}, ""},
        CheckCase{"NeuronInferentiaSeven", F::kNeuronRing, {.count = 7, .node_devices = 12}, ""},
        CheckCase{"NeuronMemoryShare", F::kNeuron, {.count = 1, .memory_mib = 1024}, "shares by cores"},
        CheckCase{"NeuronDevicesAndCores", F::kNeuron, {.count = 2, .cores = 4}, "devices or cores"},
        CheckCase{"NeuronSixCoresAreThreeDevices", F::kNeuron, {.cores = 6, .node_devices = 16, .device_cores = 2},
                  "not 3"},
        CheckCase{"NeuronTwoCoresOnTrn2", F::kNeuron, {.cores = 2, .device_cores = 8}, ""},
        CheckCase{"EnflameShareOnTwo", F::kEnflame, {.count = 2, .memory_pct = 50}, "single-device"},
        CheckCase{"MetaxCores", F::kMetax, {.cores = 1}, "no core-level"}),
    [](const ::testing::TestParamInfo<CheckCase>& info) { return std::string(info.param.name); });

// ------------------------------------------------------- single checks --

TEST(VendorRulesTest, KunlunResolvesSlicesToMemoryAndCompute) {
  const std::vector<VendorDevice> node = Node(8, kP800);
  auto quarter = PickVendorDevices(F::kKunlun, node, {.count = 2, .compute_pct = 10}, nullptr);
  ASSERT_TRUE(quarter);
  EXPECT_EQ(quarter->memory_mib_each, 24576u);
  EXPECT_EQ(quarter->share_pct, 25u);
  auto half = PickVendorDevices(F::kKunlun, node, {.count = 1, .memory_pct = 40}, nullptr);
  ASSERT_TRUE(half);
  EXPECT_EQ(half->memory_mib_each, 49152u);
  EXPECT_EQ(half->share_pct, 50u);
}

TEST(VendorRulesTest, EnflameSharePercentFollowsTheGranularity) {
  auto pick = PickVendorDevices(F::kEnflame, Node(1, 40000).Slices(4), {.count = 1, .memory_mib = 10001}, nullptr);
  ASSERT_TRUE(pick);
  EXPECT_EQ(pick->share_pct, 50u);  // 10001 MiB is just over a quarter
  EXPECT_EQ(pick->memory_mib_each, 20000u);
}

TEST(VendorRulesTest, PicksAreDeterministic) {
  const std::vector<VendorDevice> node = Node(8).Groups({1, 2, 1, 2, 1, 2, 1, 2});
  auto first = PickVendorDevices(F::kMetax, node, {.count = 3}, nullptr);
  for (int i = 0; i < 5; ++i) {
    auto again = PickVendorDevices(F::kMetax, node, {.count = 3}, nullptr);
    ASSERT_TRUE(first && again);
    EXPECT_EQ(again->slots, first->slots);
    EXPECT_EQ(again->score, first->score);
  }
}

// On an empty node every statically valid count must be placeable: the
// structural rules never refuse what the node can hold.
TEST(VendorRulesTest, EmptyNodesTakeEveryValidCount) {
  struct Layout {
    DeviceFamily family;
    std::vector<VendorDevice> devices;
    VendorRequest share;  // count set below
  };
  const std::vector<Layout> layouts = {
      {F::kAscend910, Node(8), {}},
      {F::kAscend910B, Node(8), {}},
      {F::kAscend910B, Node(16), {}},
      {F::kAscend910C, Node(16), {}},
      {F::kKunlun, Node(8, kP800), {}},
      {F::kKunlun, Node(8, kP800), {.memory_mib = 24576}},
      {F::kKunlun, Node(8, kP800), {.memory_mib = 49152}},
      {F::kNeuron, Node(16).Cores(2), {}},
      {F::kNeuron, Node(1).Cores(2), {}},
      {F::kNeuronRing, Node(12).Cores(2), {}},
      {F::kMetax, Node(8).Groups({1, 1, 2, 2, 3, 3, 0, 0}), {}},
      {F::kMetax, Node(8), {.memory_mib = 1024, .compute_pct = 10}},
      {F::kEnflame, Node(4), {}},
  };
  for (const auto& layout : layouts) {
    for (uint32_t count = 1; count <= layout.devices.size(); ++count) {
      VendorRequest request = layout.share;
      request.count = count;
      request.node_devices = static_cast<uint32_t>(layout.devices.size());
      if (CheckVendorRequest(layout.family, request)) continue;
      std::string why;
      EXPECT_TRUE(PickVendorDevices(layout.family, layout.devices, request, &why))
          << FamilyName(layout.family) << " count " << count << ": " << why;
    }
  }
}

}  // namespace
}  // namespace gpool::scheduler
