#include "worker/backoff.h"

#include <algorithm>
#include <cmath>

namespace gpool::worker {

int64_t Backoff::Next() {
  const int64_t base = base_ms_;
  base_ms_ = std::min(base_ms_ * 2, options_.max_ms);
  double u = uniform01_ ? uniform01_() : 0.5;
  u = std::clamp(u, 0.0, 1.0);
  const double factor = 1.0 + options_.jitter * (2.0 * u - 1.0);
  return std::max<int64_t>(1, std::llround(static_cast<double>(base) * factor));
}

}  // namespace gpool::worker
