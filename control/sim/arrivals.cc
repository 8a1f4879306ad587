#include "control/sim/arrivals.h"

#include <algorithm>
#include <numeric>

namespace gpool::sim {

ArrivalStream::ArrivalStream(size_t pods, uint64_t seed)
    : rng_(seed), shuffled_(pods), draw_(0, pods == 0 ? 0 : pods - 1) {
  std::iota(shuffled_.begin(), shuffled_.end(), size_t{0});
  std::shuffle(shuffled_.begin(), shuffled_.end(), rng_);
}

size_t ArrivalStream::Next() {
  if (next_ < shuffled_.size()) return shuffled_[next_++];
  return draw_(rng_);
}

}  // namespace gpool::sim
