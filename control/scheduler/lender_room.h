// LenderRoom: what reclaim may take from each queue for one reclaiming job.
//
// Reclaim compares the two sides just below where the reclaimer's path and
// the victim's path meet in the queue tree. Every queue on the victim's side
// of that point, down to the victim's leaf, is a lender, and reclaim never
// takes a lender below its floor (issue 50): its deserved share of each
// resource, or, where it has none and the reclaimer claims within its
// guarantee, its guarantee. Of a resource a lender holds beyond its floor,
// reclaim takes at most the excess; of a resource the reclaimer is weighed
// on (the GPUs it asks for, say) that the lender holds at or below its floor,
// nothing. What a lender holds leaves out its tasks already stopping (they
// leave anyway: counting them would let two cycles take the same excess).
//
// Owned for one job's victim search; not thread-safe.
#pragma once

#include <vector>

#include "control/scheduler/session.h"

namespace gpool::scheduler {

class LenderRoom {
 public:
  // Per queue index, what its tasks stopping before this cycle hold (its
  // descendants' included); built once per action.
  static std::vector<Amounts> StoppingByQueue(Session& session);

  LenderRoom(const QueueTree& tree, const std::vector<Amounts>& stopping, const WorkJob& job, const Amounts& demand);

  // Whether `queue` lends to the reclaimer at all: its own policy lets its
  // low work go, the reclaimer's side stays within its share of every
  // resource weighed, and the lending side holds more than its floor of one.
  bool Lends(int queue);
  // Whether taking `more` on top of what Take recorded keeps every lender
  // at or above its floor.
  bool Allows(const std::vector<const WorkTask*>& more);
  void Take(const WorkTask& task);

 private:
  // How many queues the reclaimer's path and `queue`'s share from root.
  size_t MeetDepth(int queue) const;
  // The lenders on the leaf's path (below the meeting point), root side first.
  std::vector<int> LendersOf(int leaf) const;
  const Amounts& RoomOf(int queue);

  const QueueTree& tree_;
  const std::vector<Amounts>& stopping_;
  const int reclaimer_;
  const Amounts& demand_;
  std::vector<bool> weighed_;  // by resource: what Lends compares
  std::vector<Amounts> room_;  // by queue; empty until asked
  std::vector<Amounts> taken_;  // by queue; empty: nothing yet
};

}  // namespace gpool::scheduler
