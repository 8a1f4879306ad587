// Rng: the simulator's single source of randomness. Every fault, delay,
// choice of event and client request comes from one generator seeded by the
// run's seed, so a seed replays exactly. Uses modulo rather than the
// standard distributions, whose output differs between library versions.
//
// Thread-safety: none.
#pragma once

#include <cstdint>
#include <random>

namespace gpool::raft::sim {

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed * 0x2545F4914F6CDD1DULL + 1) {}
  uint64_t Next() { return gen_(); }
  // Uniform in [0, n); n must be > 0.
  uint64_t Uniform(uint64_t n) { return gen_() % n; }
  // True with probability per_mille / 1000.
  bool Chance(uint32_t per_mille) { return Uniform(1000) < per_mille; }

 private:
  std::mt19937_64 gen_;
};

}  // namespace gpool::raft::sim
