// The order in which the paper experiment's pods arrive. The FGD artifact
// (hkust-adsl/kubernetes-scheduler-simulator, "tune" ratio 1.3) shuffles
// the whole pod list with the seed, lets every pod arrive once in that
// order, and only then draws copies with replacement until the demand
// target is met: the trace itself is ~98 % of the cluster on `default`, so
// most of what arrives is the production mix as it was, not a resample.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace gpool::sim {

class ArrivalStream {
 public:
  ArrivalStream(size_t pods, uint64_t seed);
  // The index (into the pod list) of the next pod to arrive.
  size_t Next();

 private:
  std::mt19937_64 rng_;
  std::vector<size_t> shuffled_;
  size_t next_ = 0;
  std::uniform_int_distribution<size_t> draw_;
};

}  // namespace gpool::sim
