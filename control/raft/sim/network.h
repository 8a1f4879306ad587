// SimNetwork: the simulator's network, a bag of messages in flight.
//
// Faults, all drawn from the run's Rng: a sent message may be dropped or
// duplicated, and each copy gets a random delay in ticks; delivery picks a
// random deliverable message, so messages are reordered freely (unless the
// faults ask for in-order links). A partition
// assigns nodes to groups; messages between groups are dropped when sent and
// when delivered (a partition that starts while a message is in flight
// still cuts it). Messages to a crashed node are dropped on delivery by the
// cluster. Owned by SimCluster. Thread-safety: none.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "control/raft/messages.h"
#include "control/raft/sim/rng.h"

namespace gpool::raft::sim {

struct NetworkFaults {
  uint32_t drop_per_mille = 0;
  uint32_t duplicate_per_mille = 0;
  uint64_t max_delay_ticks = 0;  // each copy waits 0..max_delay_ticks ticks
  // Each link delivers in send order, as a TCP connection does. Off during
  // the chaos (any order); on in the liveness phase, where free reordering
  // of a leader's pipelined appends would make each reordered one a reject
  // and a resend of the whole window, which is quadratic in the lag and no
  // real network does for long.
  bool in_order = false;
};

class SimNetwork {
 public:
  explicit SimNetwork(Rng* rng) : rng_(rng) {}

  void set_faults(NetworkFaults faults) { faults_ = faults; }
  void Send(Message m, uint64_t now);
  // A random message deliverable at `now` (its delay has passed and its
  // endpoints are connected; with in_order, the oldest on its link), removed
  // from the network; nullopt if none.
  std::optional<Message> TakeDeliverable(uint64_t now);
  size_t in_flight() const { return in_flight_.size(); }
  uint64_t dropped() const { return dropped_; }

  // group_of maps node -> group; nodes not listed are in group 0.
  void Partition(std::map<uint64_t, int> group_of) { group_of_ = std::move(group_of); }
  void Heal() { group_of_.clear(); }
  bool Connected(uint64_t a, uint64_t b) const { return Group(a) == Group(b); }
  bool partitioned() const { return !group_of_.empty(); }

 private:
  struct InFlight {
    uint64_t deliver_at;
    uint64_t seq;  // send order
    Message message;
  };
  int Group(uint64_t id) const {
    auto it = group_of_.find(id);
    return it == group_of_.end() ? 0 : it->second;
  }

  Rng* rng_;
  NetworkFaults faults_;
  std::vector<InFlight> in_flight_;
  std::map<uint64_t, int> group_of_;
  uint64_t dropped_ = 0;
  uint64_t next_seq_ = 0;
};

}  // namespace gpool::raft::sim
