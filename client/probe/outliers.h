// The slow-node rule of `gpool probe`: which of a set of per-node
// measurements (bandwidths, higher is better) are outliers on the low side.
// Pure: numbers in, verdict out; the CLI prints the verdict and sends it.
//
// The rule, in order:
//   fewer than `min_nodes` (3) values: nothing is flagged; a median of two
//     says nothing about which one is wrong.
//   median M of the values; MAD = median of |x - M|, scaled by 1.4826 so it
//     estimates the standard deviation of normally distributed values.
//   MAD > 0: the threshold is M - k x MAD (k default 3).
//   MAD = 0 (at least half the values are equal, so the spread says
//     nothing): the threshold is `relative_floor` x M (default 50%).
//   In both cases a value is also never flagged while it is within
//     `min_drop` (default 10%) of the median: with nearly equal nodes the
//     MAD is tiny and M - k x MAD would otherwise flag a node 2% slower.
//   A value strictly below the threshold is flagged `slow`.
// Median and MAD ignore nothing: one outlier moves neither much, which is why
// they are used instead of mean and standard deviation.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace gpool::probe {

struct OutlierOptions {
  double k = 3.0;               // how many (scaled) MADs below the median is slow
  double relative_floor = 0.5;  // with MAD 0: slow below this fraction of the median
  double min_drop = 0.1;        // never slow within this fraction of the median
  size_t min_nodes = 3;         // fewer values than this: nothing is flagged
};

struct OutlierVerdict {
  double median = 0;
  double mad = 0;         // scaled (x 1.4826)
  double threshold = 0;   // slow: value < threshold; 0 when too few values
  std::string rule;       // "mad", "relative" (MAD 0) or "too-few"
  std::vector<bool> slow; // one per value, in the order given
};

// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double Median(std::vector<double> values);

// The verdict over `values` (one per node, in any order).
OutlierVerdict FlagSlow(std::span<const double> values, const OutlierOptions& options = {});

}  // namespace gpool::probe
