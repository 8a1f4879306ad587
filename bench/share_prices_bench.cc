// What the fragmentation strategy's share-packing LP costs (control/scheduler/share_prices.h):
// a cold solve for the trace's gpushare40 mix and for random mixes of as many
// sizes as are priced, beside the remembered lookup a session pays when the
// mix has not changed (the baseline, measured in the same run). Prints JSON
// lines {"metric", "value", "unit", "params"}.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "control/scheduler/share_prices.h"

namespace {

using gpool::scheduler::SharePrices;
using gpool::scheduler::SharePricesFor;
using gpool::topology::WorkloadShape;
using Clock = std::chrono::steady_clock;

std::vector<WorkloadShape> Gpushare40() {
  const std::vector<std::pair<uint32_t, double>> counts = {
      {50, 18},   {110, 30},  {160, 96},  {220, 79},  {230, 163}, {270, 7},   {290, 4},
      {320, 414}, {330, 7},   {350, 12},  {370, 52},  {440, 2},   {460, 177}, {470, 952},
      {480, 20},  {550, 101}, {590, 113}, {650, 361}, {810, 1393}};
  std::vector<WorkloadShape> shapes;
  for (const auto& [milli, count] : counts) shapes.push_back({1, milli, 4000, "", count});
  return shapes;
}

std::vector<WorkloadShape> RandomMix(std::mt19937& random) {
  std::uniform_int_distribution<uint32_t> size(1, 999);
  std::uniform_real_distribution<double> weight(0.01, 1.0);
  std::vector<WorkloadShape> shapes;
  for (size_t i = 0; i < gpool::scheduler::kMaxPricedShareSizes; ++i) {
    shapes.push_back({1, size(random), 1000, "", weight(random)});
  }
  return shapes;
}

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// Median and worst of `runs` cold solves.
struct Timing {
  double median_us;
  double max_us;
};

template <typename MakeMix>
Timing TimeSolves(int runs, MakeMix make_mix) {
  std::vector<double> us;
  for (int i = 0; i < runs; ++i) {
    const auto mix = make_mix();
    const auto start = Clock::now();
    const SharePrices prices(mix);
    us.push_back(Micros(Clock::now() - start));
    if (prices.Stranded(1000) != 0) std::abort();  // keeps the solve from being optimised away
  }
  std::sort(us.begin(), us.end());
  return Timing{us[us.size() / 2], us.back()};
}

}  // namespace

int main() {
  constexpr int kRuns = 50;
  const auto trace = Gpushare40();
  const Timing trace_solve = TimeSolves(kRuns, [&] { return trace; });
  std::mt19937 random(7);
  const Timing random_solve = TimeSolves(kRuns, [&] { return RandomMix(random); });

  // Baseline: a session whose share mix is unchanged finds its prices remembered.
  SharePricesFor(trace);
  constexpr int kLookups = 20000;
  const auto start = Clock::now();
  size_t found = 0;
  for (int i = 0; i < kLookups; ++i) found += SharePricesFor(trace) != nullptr;
  const double lookup_us = Micros(Clock::now() - start) / kLookups;
  if (found != kLookups) return 1;

  std::printf(
      "{\"metric\": \"share_prices_solve_us\", \"value\": %.1f, \"unit\": \"us\", \"params\": {\"mix\": "
      "\"gpushare40\", \"sizes\": %zu, \"runs\": %d, \"max_us\": %.1f, \"remembered_lookup_us\": %.2f, "
      "\"solve_over_lookup\": %.0f}}\n",
      trace_solve.median_us, trace.size(), kRuns, trace_solve.max_us, lookup_us, trace_solve.median_us / lookup_us);
  std::printf(
      "{\"metric\": \"share_prices_solve_us\", \"value\": %.1f, \"unit\": \"us\", \"params\": {\"mix\": "
      "\"random\", \"sizes\": %zu, \"runs\": %d, \"max_us\": %.1f, \"remembered_lookup_us\": %.2f, "
      "\"solve_over_lookup\": %.0f}}\n",
      random_solve.median_us, gpool::scheduler::kMaxPricedShareSizes, kRuns, random_solve.max_us, lookup_us,
      random_solve.median_us / lookup_us);
  return 0;
}
