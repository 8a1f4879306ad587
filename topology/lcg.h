// Lcg: a small deterministic random generator (64-bit LCG, Knuth's MMIX
// constants) for simulators, benches and property tests: the same seed gives
// the same sequence on every machine and library, unlike std::
// distributions, so a failing seed can be replayed anywhere.
#pragma once

#include <cstdint>

namespace gpool::topology {

class Lcg {
 public:
  explicit Lcg(uint64_t seed) : state_(seed) {}
  uint32_t Next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state_ >> 33);  // the high bits are the good ones
  }
  // Uniform enough in [0, n); 0 when n is 0.
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }
  bool Percent(uint32_t p) { return Below(100) < p; }

 private:
  uint64_t state_;
};

}  // namespace gpool::topology
