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

// The order the nodes take for the seed. The artifact also prefixes every
// node's name with a random permutation index before the run, so its
// scheduler's ties (to the first node by name) go to a node drawn anew per
// seed, not to the first in the node list; gpool's ties go to the first node
// in the cluster's order, so the experiment shuffles that order instead.
// Kept in trace order, every policy's ties piled onto the list's first
// nodes, the 2-GPU P100s.
std::vector<size_t> NodeOrder(size_t nodes, uint64_t seed);

}  // namespace gpool::sim
