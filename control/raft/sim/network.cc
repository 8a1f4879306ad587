#include "control/raft/sim/network.h"

#include <algorithm>
#include <utility>

namespace gpool::raft::sim {

void SimNetwork::Send(Message m, uint64_t now) {
  if (!Connected(m.from, m.to) || rng_->Chance(faults_.drop_per_mille)) {
    ++dropped_;
    return;
  }
  const int copies = rng_->Chance(faults_.duplicate_per_mille) ? 2 : 1;
  for (int i = 0; i < copies; ++i) {
    const uint64_t delay = faults_.max_delay_ticks == 0 ? 0 : rng_->Uniform(faults_.max_delay_ticks + 1);
    in_flight_.push_back({now + delay, next_seq_++, i + 1 < copies ? m : std::move(m)});
  }
}

std::optional<Message> SimNetwork::TakeDeliverable(uint64_t now) {
  while (true) {
    // In order: only the oldest message of each link may go next.
    std::map<std::pair<uint64_t, uint64_t>, uint64_t> oldest;
    if (faults_.in_order) {
      for (const InFlight& f : in_flight_) {
        auto [it, added] = oldest.try_emplace({f.message.from, f.message.to}, f.seq);
        if (!added) it->second = std::min(it->second, f.seq);
      }
    }
    // Reservoir-pick one deliverable message uniformly in a single pass.
    size_t chosen = in_flight_.size();
    uint64_t seen = 0;
    for (size_t i = 0; i < in_flight_.size(); ++i) {
      if (in_flight_[i].deliver_at > now) continue;
      if (faults_.in_order && oldest[{in_flight_[i].message.from, in_flight_[i].message.to}] != in_flight_[i].seq) {
        continue;
      }
      if (rng_->Uniform(++seen) == 0) chosen = i;
    }
    if (chosen == in_flight_.size()) return std::nullopt;
    Message m = std::move(in_flight_[chosen].message);
    in_flight_[chosen] = std::move(in_flight_.back());
    in_flight_.pop_back();
    if (Connected(m.from, m.to)) return m;
    ++dropped_;  // cut by a partition while in flight
  }
}

}  // namespace gpool::raft::sim
