// LeaderService: a driver that works only while this replica serves as the
// leader (health policy, retention, usage checkpoints, session leases,
// alerts, watches). The coordinator keeps them in one list: it ticks each,
// in order, on every loop turn while it leads, and resets each when
// leadership changes hands (what one leadership had in flight is not the
// next one's). Tick proposes through the ProposalTracker; it never blocks.
#pragma once

#include <cstdint>

namespace gpool::control {

class LeaderService {
 public:
  virtual ~LeaderService() = default;
  virtual void Tick(int64_t now_ms) = 0;
  virtual void Reset() = 0;
};

}  // namespace gpool::control
