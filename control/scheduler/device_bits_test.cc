#include "control/scheduler/device_bits.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "control/scheduler/gpu_picker.h"
#include "control/scheduler/scenario.h"
#include "topology/lcg.h"

namespace gpool::scheduler {
namespace {

// The same operations on DeviceBits and on std::vector<bool> (the type it
// replaced) agree at every size, across the inline/heap boundary.
TEST(DeviceBitsTest, MatchesVectorOfBoolAcrossTheInlineLimit) {
  topology::Lcg rng(49);
  for (size_t size : {size_t{0}, size_t{1}, size_t{8}, size_t{63}, size_t{64}, size_t{65}, size_t{128}, size_t{129},
                      size_t{200}}) {
    DeviceBits bits;
    std::vector<bool> expected;
    for (size_t i = 0; i < size; ++i) {
      const bool value = rng.Below(2) == 0;
      bits.PushBack(value);
      expected.push_back(value);
    }
    for (int round = 0; round < 200 && size > 0; ++round) {
      const size_t at = rng.Below(size);
      const bool value = rng.Below(2) == 0;
      bits.Set(at, value);
      expected[at] = value;
    }
    ASSERT_EQ(bits.size(), expected.size()) << size;
    size_t set = 0;
    for (size_t i = 0; i < size; ++i) {
      ASSERT_EQ(bits[i], expected[i]) << "size " << size << " bit " << i;
      set += expected[i] ? 1 : 0;
    }
    EXPECT_EQ(bits.Count(), set) << size;
  }
}

TEST(DeviceBitsTest, AssignFillsExactlyItsSize) {
  for (size_t size : {size_t{0}, size_t{5}, size_t{64}, size_t{70}, size_t{256}}) {
    DeviceBits bits(size, true);
    EXPECT_EQ(bits.size(), size);
    EXPECT_EQ(bits.Count(), size) << "bits past the size must stay clear";
    bits.Assign(size, false);
    EXPECT_EQ(bits.Count(), 0u);
  }
  DeviceBits spilled(100, true);
  spilled.Assign(3, true);  // back inline
  EXPECT_EQ(spilled.Count(), 3u);
  spilled.Assign(0, true);
  EXPECT_TRUE(spilled.empty());
  EXPECT_EQ(spilled.Count(), 0u);
}

TEST(DeviceBitsTest, CopiesAndMovesOwnTheirBits) {
  for (size_t size : {size_t{8}, size_t{90}}) {
    DeviceBits original(size, false);
    original.Set(1, true);
    original.Set(size - 1, true);
    DeviceBits copy = original;
    copy.Set(1, false);
    EXPECT_TRUE(original[1]) << "a copy's change leaves the original alone (" << size << ")";
    EXPECT_FALSE(copy == original);
    copy.Set(1, true);
    EXPECT_TRUE(copy == original);

    DeviceBits moved = std::move(copy);
    EXPECT_TRUE(moved == original);
    EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): a moved-from mask is empty
    DeviceBits assigned(3, true);
    assigned = original;
    EXPECT_TRUE(assigned == original);
    assigned = DeviceBits(2, true);
    EXPECT_EQ(assigned.size(), 2u);
    EXPECT_EQ(assigned.Count(), 2u);
  }
}

// A node listing more than 64 devices (the heap case) is picked from like
// any other: the lowest free positions without NVLink, past 64 included.
TEST(DeviceBitsTest, PickGpusReadsDevicesPastSixtyFour) {
  topology::NodeView node = testing::MakeNode("wide", 96);
  DeviceBits free(96, false);
  for (size_t s : {size_t{3}, size_t{70}, size_t{95}}) free.Set(s, true);
  const auto picked = PickGpus(node, free, GpuRequest{3, "", topology::NumaPolicy::kNone});
  ASSERT_TRUE(picked);
  EXPECT_EQ(*picked, (std::vector<size_t>{3, 70, 95}));
  EXPECT_FALSE(PickGpus(node, free, GpuRequest{4, "", topology::NumaPolicy::kNone}));
}

}  // namespace
}  // namespace gpool::scheduler
