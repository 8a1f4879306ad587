#include "client/probe/outliers.h"

#include <algorithm>
#include <cmath>

namespace gpool::probe {

namespace {
// The consistency constant that makes the MAD of normal data estimate sigma.
constexpr double kMadScale = 1.4826;
}  // namespace

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

OutlierVerdict FlagSlow(std::span<const double> values, const OutlierOptions& options) {
  OutlierVerdict verdict;
  verdict.slow.assign(values.size(), false);
  verdict.median = Median({values.begin(), values.end()});
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values) deviations.push_back(std::fabs(v - verdict.median));
  verdict.mad = kMadScale * Median(std::move(deviations));
  if (values.size() < options.min_nodes || values.empty()) {
    verdict.rule = "too-few";
    return verdict;
  }
  if (verdict.mad > 0) {
    verdict.rule = "mad";
    verdict.threshold = verdict.median - options.k * verdict.mad;
  } else {
    verdict.rule = "relative";
    verdict.threshold = options.relative_floor * verdict.median;
  }
  verdict.threshold = std::min(verdict.threshold, (1.0 - options.min_drop) * verdict.median);
  for (size_t i = 0; i < values.size(); ++i) verdict.slow[i] = values[i] < verdict.threshold;
  return verdict;
}

}  // namespace gpool::probe
