// The share-packing LP: its solver, the prices it gives the trace's share
// mix (checked against GLPK's glpsol on the same program), and what they
// make of a device's room.
#include "control/scheduler/share_prices.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "control/scheduler/unit_lp.h"

namespace gpool::scheduler {
namespace {

using topology::WorkloadShape;

constexpr double kNear = 1e-9;

TEST(UnitLpTest, FindsTheVertexOfTwoBindingRows) {
  // max x + y with 2x + y <= 1 and x + 3y <= 1: x = 2/5, y = 1/5.
  const auto y = MaximizeUnderUnitRows({1, 1}, {{2, 1}, {1, 3}});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_NEAR(y[0], 0.4, kNear);
  EXPECT_NEAR(y[1], 0.2, kNear);
}

TEST(UnitLpTest, DegenerateRowsStillReachTheOptimum) {
  // Repeated and redundant rows: every point of x + y = 1 is optimal.
  const auto y = MaximizeUnderUnitRows({1, 1}, {{1, 0}, {1, 0}, {0, 1}, {1, 1}, {2, 2}});
  EXPECT_NEAR(y[0] + y[1], 0.5, kNear);  // the {2, 2} row binds
  EXPECT_GE(y[0], 0);
  EXPECT_GE(y[1], 0);
  // A variable worth nothing stays at zero.
  const auto zero = MaximizeUnderUnitRows({0, 1}, {{1, 1}});
  EXPECT_NEAR(zero[0], 0, kNear);
  EXPECT_NEAR(zero[1], 1, kNear);
}

std::vector<WorkloadShape> Shares(const std::vector<std::pair<uint32_t, double>>& mix) {
  std::vector<WorkloadShape> shapes;
  for (const auto& [milli, count] : mix) shapes.push_back({1, milli, 4000, "", count});
  return shapes;
}

TEST(SharePricesTest, OneSizeCostsADeviceOverHowManyFit) {
  const SharePrices prices(Shares({{300, 1.0}}));
  EXPECT_NEAR(prices.PriceOf(300), 1.0 / 3, kNear);
  EXPECT_NEAR(prices.Stranded(299), 299, kNear);            // takes none
  EXPECT_NEAR(prices.Stranded(300), 300 - 1000.0 / 3, kNear);  // takes one, a third of a device's worth
  EXPECT_NEAR(prices.Stranded(700), 700 - 2000.0 / 3, kNear);
  EXPECT_EQ(prices.Stranded(1000), 0);
  EXPECT_EQ(prices.Stranded(5000), 0);
}

TEST(SharePricesTest, WithoutSharesAPartlyUsedDeviceStrandsItsRoom) {
  // Whole and multi-GPU shapes and CPU-only ones take no share of a device.
  const SharePrices prices({{1, 1000, 4000, "", 0.5}, {4, 1000, 4000, "", 0.3}, {0, 0, 4000, "", 0.2}});
  EXPECT_EQ(prices.Stranded(700), 700);
  EXPECT_EQ(prices.Stranded(1000), 0);
  EXPECT_EQ(SharePrices().Stranded(700), 700);
  EXPECT_EQ(SharePrices().PriceOf(300), 0);
}

// The one-GPU shares of openb_pod_list_gpushare40.csv, by count.
std::vector<WorkloadShape> Gpushare40() {
  return Shares({{50, 18}, {110, 30}, {160, 96}, {220, 79}, {230, 163}, {270, 7}, {290, 4}, {320, 414}, {330, 7},
                 {350, 12}, {370, 52}, {440, 2}, {460, 177}, {470, 952}, {480, 20}, {550, 101}, {590, 113},
                 {650, 361}, {810, 1393}});
}

TEST(SharePricesTest, TheTraceMixPricesAsGlpkDoes) {
  const auto workload = Gpushare40();
  const SharePrices prices(workload);
  // glpsol on the same program (its optimal face is one point here).
  for (uint32_t size : {50, 110, 160, 220}) EXPECT_NEAR(prices.PriceOf(size), 0, 1e-7) << size;
  for (uint32_t size : {230, 270, 290, 320, 330, 350, 370, 440}) EXPECT_NEAR(prices.PriceOf(size), 0.25, 1e-7) << size;
  for (uint32_t size : {460, 470, 480}) EXPECT_NEAR(prices.PriceOf(size), 0.5, 1e-7) << size;
  for (uint32_t size : {550, 590, 650}) EXPECT_NEAR(prices.PriceOf(size), 0.75, 1e-7) << size;
  EXPECT_NEAR(prices.PriceOf(810), 1, 1e-7);
  // The LP's devices per share, as glpsol reports it.
  double total = 0;
  double devices = 0;
  for (const auto& shape : workload) {
    total += shape.weight;
    devices += shape.weight * prices.PriceOf(shape.gpu_milli);
  }
  EXPECT_NEAR(devices / total, 0.6408397900524869, 1e-7);
}

TEST(SharePricesTest, ARoomIsWorthItsBestFilling) {
  const SharePrices prices(Gpushare40());
  // Beside a 650: one share of 230 to 350 (a quarter device) fits.
  EXPECT_NEAR(prices.Stranded(350), 350 - 250, 1e-6);
  // A 320 there leaves 30, a 230 leaves 120: neither fills with anything priced.
  const double with_320 = prices.Stranded(30) - prices.Stranded(350);
  const double with_230 = prices.Stranded(120) - prices.Stranded(350);
  EXPECT_NEAR(with_320, -70, 1e-6);
  EXPECT_NEAR(with_230, 20, 1e-6);
  // Beside a 470 (530 free) the room is a 470's; a 320 there spoils it.
  EXPECT_NEAR(prices.Stranded(210) - prices.Stranded(530), 180, 1e-6);
  EXPECT_NEAR(prices.Stranded(60) - prices.Stranded(530), 30, 1e-6);
}

// Random mixes of as many sizes as the LP prices: the prices are feasible
// (no filling of a device collects more than one device) and at least as
// good as pricing each share by its size, which is feasible too.
TEST(SharePricesTest, RandomMixesPriceFeasiblyAndAtLeastBySize) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<WorkloadShape> workload;
    std::uniform_int_distribution<uint32_t> size(1, 999);
    std::uniform_real_distribution<double> weight(0.01, 1.0);
    for (size_t i = 0; i < kMaxPricedShareSizes; ++i) workload.push_back({1, size(random), 1000, "", weight(random)});
    const SharePrices prices(workload);
    double by_size = 0;
    double priced = 0;
    for (const auto& shape : workload) {
      by_size += shape.weight * shape.gpu_milli / 1000.0;
      priced += shape.weight * prices.PriceOf(shape.gpu_milli);
    }
    EXPECT_GE(priced, by_size - 1e-9) << trial;
    for (uint32_t room = 0; room < 1000; ++room) ASSERT_GE(prices.Stranded(room), room - 1000.0 - 1e-6) << trial;
  }
}

TEST(SharePricesTest, OneSolvePerMix) {
  const auto first = SharePricesFor(Gpushare40());
  EXPECT_EQ(SharePricesFor(Gpushare40()).get(), first.get());
  auto other = Gpushare40();
  other.front().weight += 1;
  const auto second = SharePricesFor(other);
  EXPECT_NE(second.get(), first.get());
  EXPECT_NEAR(second->PriceOf(810), 1, 1e-7);
}

}  // namespace
}  // namespace gpool::scheduler
