// The priority-class rule, in one place, for every path that places or
// evicts work (HBox's rule, issue 50):
//
//   system  placed first; never evicted; may preempt low work of its queue.
//   high    may preempt low work of its queue; never evicted.
//   medium  a fixed guarantee: neither preempts nor is evicted, not even an
//           elastic replica above its job's minimum.
//   low     may be evicted (preempted by its queue's high and system jobs,
//           reclaimed by other queues), whole or a spare replica at a time.
//
// A queue's preemption policy (QueueSpec.preempting_classes,
// low_reclaimable) narrows this per queue; it never widens it.
//
// Reclaim can only give a queue back its deserved share if what other queues
// hold beyond theirs may be taken, so only evictable work may borrow: a job
// of another class (or low work of a queue that forbids reclaiming it) is
// placed only while its queue chain stays within deserved, replicas above
// the minimum included. An elastic medium, high or system job therefore
// shrinks only when it or its owner asks; node failure, a health drain and
// the owner's cancel are the only other ways such a task stops early.
#pragma once

#include "protocol/types.h"

namespace gpool::scheduler {

// Its gang may run beyond the queue's deserved share.
inline bool GangMayBorrow(PriorityClass c) { return c == PriorityClass::kLow; }
// Its replicas above the minimum may run beyond the queue's deserved share.
inline bool SpareMayBorrow(PriorityClass c) { return c == PriorityClass::kLow; }
// A task of it may be evicted even when that breaks its job's gang (the job then stops whole).
inline bool EvictableWhole(PriorityClass c) { return c == PriorityClass::kLow; }
// A replica of it above its group's minimum may be evicted alone.
inline bool EvictableSpare(PriorityClass c) { return c == PriorityClass::kLow; }
// It may preempt evictable work of its own queue.
inline bool MayPreempt(PriorityClass c) { return c >= PriorityClass::kHigh; }

// A queue's preemption policy (QueueSpec.preempting_classes and
// low_reclaimable): it only narrows the rule above for that queue's own jobs
// and work; the defaults are the rule itself.
struct QueuePolicy {
  // Bit c set: its jobs of class c may preempt its low work.
  uint8_t preemptors = (1u << static_cast<unsigned>(PriorityClass::kHigh)) |
                       (1u << static_cast<unsigned>(PriorityClass::kSystem));
  // Other queues may reclaim its low work.
  bool low_reclaimable = true;
};
inline bool MayPreempt(PriorityClass c, const QueuePolicy& queue) {
  return MayPreempt(c) && ((queue.preemptors >> static_cast<unsigned>(c)) & 1u) != 0;
}
// Low work that no other queue may take back must not borrow either (else
// reclaim could not give the lender its share back).
inline bool GangMayBorrow(PriorityClass c, const QueuePolicy& queue) { return GangMayBorrow(c) && queue.low_reclaimable; }
inline bool SpareMayBorrow(PriorityClass c, const QueuePolicy& queue) { return SpareMayBorrow(c) && queue.low_reclaimable; }

}  // namespace gpool::scheduler
