#include "client/probe/outliers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace gpool::probe {
namespace {

std::vector<bool> Slow(const std::vector<double>& values, const OutlierOptions& options = {}) {
  return FlagSlow(values, options).slow;
}

TEST(MedianTest, OddEvenAndEmpty) {
  EXPECT_EQ(Median({}), 0);
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
}

TEST(FlagSlowTest, OneOutlierAmongSimilarNodes) {
  const std::vector<double> values = {1000, 1010, 990, 1005, 200};
  OutlierVerdict v = FlagSlow(values);
  EXPECT_EQ(v.rule, "mad");
  EXPECT_NEAR(v.median, 1000, 1e-9);
  // median |ln x - ln 1000| = ln(1010/1000), scaled; exp(-3 MAD) x 1000 is about 957,
  // and the threshold is at most 90% of the median.
  EXPECT_NEAR(v.spread, std::exp(1.4826 * std::log(1010.0 / 1000)), 1e-12);
  EXPECT_NEAR(v.threshold, 900, 1e-9);
  EXPECT_EQ(v.slow, (std::vector<bool>{false, false, false, false, true}));
}

TEST(FlagSlowTest, TheThresholdIsMedianMinusKMadsOnTheLogScale) {
  // Spread out: median 900; |ln x - ln 900| sorted: 0, ln(1000/900), ln(900/800), ...
  const std::vector<double> values = {1000, 1100, 900, 800, 300};
  OutlierVerdict v = FlagSlow(values);
  EXPECT_EQ(v.rule, "mad");
  EXPECT_NEAR(v.median, 900, 1e-9);
  const double mad = 1.4826 * std::log(900.0 / 800);
  EXPECT_NEAR(v.threshold, 900 * std::exp(-3 * mad), 1e-9);  // about 533
  EXPECT_EQ(v.slow, (std::vector<bool>{false, false, false, false, true}));
  // A larger k flags nothing: 900 x exp(-8 MAD) is about 223.
  EXPECT_EQ(Slow(values, {.k = 8}), (std::vector<bool>(5, false)));
}

TEST(FlagSlowTest, HealthyNodesAFactorApartDoNotHideAVerySlowOne) {
  // Four nodes on a busy machine: the healthy ones 2.3x apart. In MiB/s the
  // MAD (about 2,300) would put the threshold below zero.
  EXPECT_EQ(Slow({2376.7, 5465.5, 3137.7, 20}), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(Slow({3861.8, 6113.7, 2797.6, 20}), (std::vector<bool>{false, false, false, true}));
  // Nor, with five nodes, does a very fast one as well.
  EXPECT_EQ(Slow({1000, 1100, 1050, 50000, 20}), (std::vector<bool>{false, false, false, false, true}));
}

TEST(FlagSlowTest, AllEqualFallsBackToTheRelativeFloorAndFlagsNothing) {
  OutlierVerdict v = FlagSlow(std::vector<double>{500, 500, 500, 500});
  EXPECT_EQ(v.rule, "relative");
  EXPECT_EQ(v.spread, 1);
  EXPECT_NEAR(v.threshold, 250, 1e-9);
  EXPECT_EQ(v.slow, (std::vector<bool>(4, false)));
}

TEST(FlagSlowTest, TiesWithOneOutlierUseTheRelativeFloor) {
  // MAD is 0 (three of four equal): below 50% of the median is slow.
  EXPECT_EQ(Slow({500, 500, 500, 100}), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(Slow({500, 500, 500, 300}), (std::vector<bool>(4, false)));
  EXPECT_EQ(Slow({500, 500, 500, 300}, {.relative_floor = 0.7}), (std::vector<bool>{false, false, false, true}));
}

TEST(FlagSlowTest, Zeros) {
  // All zero: nothing to compare against.
  EXPECT_EQ(Slow({0, 0, 0}), (std::vector<bool>(3, false)));
  // A node that measured nothing among working ones is slow.
  EXPECT_EQ(Slow({1000, 990, 1010, 0}), (std::vector<bool>{false, false, false, true}));
  // Most nodes at zero: the median is zero and nobody is below it.
  EXPECT_EQ(Slow({0, 0, 0, 1000}), (std::vector<bool>(4, false)));
}

TEST(FlagSlowTest, FewerThanThreeNodesAreNeverFlagged) {
  OutlierVerdict v = FlagSlow(std::vector<double>{1000, 10});
  EXPECT_EQ(v.rule, "too-few");
  EXPECT_EQ(v.slow, (std::vector<bool>{false, false}));
  EXPECT_EQ(FlagSlow(std::vector<double>{}).slow, std::vector<bool>{});
  EXPECT_EQ(FlagSlow(std::vector<double>{1}).rule, "too-few");
}

TEST(FlagSlowTest, NearlyEqualNodesAreNotFlaggedForATinySpread) {
  // MAD is about 0.07 x 1.48: M - 3 x MAD would flag the 95; 10% below the median is the least that counts.
  EXPECT_EQ(Slow({100, 100.1, 99.9, 100.05, 95}), (std::vector<bool>(5, false)));
  EXPECT_EQ(Slow({100, 100.1, 99.9, 100.05, 89}), (std::vector<bool>{false, false, false, false, true}));
}

TEST(FlagSlowTest, FastNodesAreNeverFlagged) {
  EXPECT_EQ(Slow({1000, 1000, 1010, 5000}), (std::vector<bool>(4, false)));
}

TEST(FlagSlowTest, OrderDoesNotMatter) {
  EXPECT_EQ(Slow({200, 1000, 1010, 990, 1005}), (std::vector<bool>{true, false, false, false, false}));
}

}  // namespace
}  // namespace gpool::probe
