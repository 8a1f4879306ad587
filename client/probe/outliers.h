// The slow-node rule of `gpool probe`: which of a set of per-node
// measurements (bandwidths, higher is better) are outliers on the low side.
// Pure: numbers in, verdict out; the CLI prints the verdict and sends it.
//
// The rule works on the logarithm of the values, because bandwidth is a
// ratio scale: a node at half the median is as far off at 100 MiB/s as at
// 10 GiB/s, and healthy nodes that differ by a factor (2,400 and 5,500 MiB/s
// on a busy machine) must not widen the spread so much that a node at 20
// MiB/s hides inside it, which a spread in MiB/s does with four nodes.
//   fewer than `min_nodes` (3) values: nothing is flagged; a median of two
//     says nothing about which one is wrong.
//   on x = ln(value) (values below `epsilon` count as `epsilon`, so a node
//     that measured 0 is far below any that measured something):
//     median M of the x; MAD = median of |x - M|, scaled by 1.4826 so it
//     estimates the standard deviation of normally distributed x.
//   MAD > 0: slow below exp(M - k x MAD) (k default 3).
//   MAD = 0 (at least half the values are equal, so the spread says
//     nothing): slow below `relative_floor` x exp(M) (default 50% of the median).
//   Either way, a value within `min_drop` (default 10%) of the median is
//     never slow: with nearly equal nodes the MAD is tiny and the rule would
//     otherwise flag a node 2% slower.
//   Slow means strictly below the threshold.
// Median and MAD are used instead of mean and standard deviation because one
// outlier moves neither much.
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
  double epsilon = 1e-6;        // values below this count as this (the log of 0)
};

struct OutlierVerdict {
  double median = 0;      // in the values' unit: exp(M), the median for an odd count
  double spread = 1;      // exp(MAD): the factor one (scaled) MAD stands for; 1 when MAD is 0
  double threshold = 0;   // slow: value < threshold; 0 when too few values
  std::string rule;       // "mad", "relative" (MAD 0) or "too-few"
  std::vector<bool> slow; // one per value, in the order given
};

// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double Median(std::vector<double> values);

// The verdict over `values` (one per node, in any order).
OutlierVerdict FlagSlow(std::span<const double> values, const OutlierOptions& options = {});

}  // namespace gpool::probe
