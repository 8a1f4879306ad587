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
  if (values.empty() || values.size() < options.min_nodes) {
    verdict.rule = "too-few";
    verdict.median = Median({values.begin(), values.end()});
    return verdict;
  }
  std::vector<double> logs;
  logs.reserve(values.size());
  for (double v : values) logs.push_back(std::log(std::max(v, options.epsilon)));
  const double m = Median(logs);
  std::vector<double> deviations;
  deviations.reserve(logs.size());
  for (double x : logs) deviations.push_back(std::fabs(x - m));
  const double mad = kMadScale * Median(std::move(deviations));
  verdict.median = std::exp(m);
  verdict.spread = std::exp(mad);
  if (mad > 0) {
    verdict.rule = "mad";
    verdict.threshold = std::exp(m - options.k * mad);
  } else {
    verdict.rule = "relative";
    verdict.threshold = options.relative_floor * verdict.median;
  }
  verdict.threshold = std::min(verdict.threshold, (1.0 - options.min_drop) * verdict.median);
  for (size_t i = 0; i < values.size(); ++i) verdict.slow[i] = std::max(values[i], options.epsilon) < verdict.threshold;
  return verdict;
}

}  // namespace gpool::probe
