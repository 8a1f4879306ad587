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

std::vector<size_t> NodeOrder(size_t nodes, uint64_t seed) {
  std::vector<size_t> order(nodes);
  std::iota(order.begin(), order.end(), size_t{0});
  // A stream apart from the arrivals', so the pods arrive as before.
  std::mt19937_64 rng(seed ^ 0x6E6F64652D6F7264ull);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

}  // namespace gpool::sim
