// The priority-class rule, in one place, for every path that places or
// evicts work:
//
//   system  placed first; never evicted; may preempt low work of its queue.
//   high    may preempt low work of its queue; never evicted.
//   medium  neither preempts nor is evicted.
//   low     may be evicted (preempted by its queue's high and system jobs,
//           reclaimed by other queues).
//
// Reclaim can only give a queue back its deserved share if what other queues
// hold beyond theirs may be taken, so only evictable work may borrow: a job
// of another class is placed only while its queue chain stays within
// deserved. Replicas of an elastic job above its minimum are the exception
// that keeps elastic jobs useful: low and medium ones may borrow and count as
// preemptible (high and system ones stay within deserved and are never
// evicted). Node failure, a health drain and the owner's cancel are the only
// other ways a high, medium or system task stops early.
#pragma once

#include "protocol/types.h"

namespace gpool::scheduler {

// Its gang may run beyond the queue's deserved share.
inline bool GangMayBorrow(PriorityClass c) { return c == PriorityClass::kLow; }
// Its replicas above the minimum may run beyond the queue's deserved share.
inline bool SpareMayBorrow(PriorityClass c) { return c <= PriorityClass::kMedium; }
// A task of it may be evicted even when that breaks its job's gang (the job then stops whole).
inline bool EvictableWhole(PriorityClass c) { return c == PriorityClass::kLow; }
// A replica of it above its group's minimum may be evicted alone.
inline bool EvictableSpare(PriorityClass c) { return c <= PriorityClass::kMedium; }
// It may preempt evictable work of its own queue.
inline bool MayPreempt(PriorityClass c) { return c >= PriorityClass::kHigh; }

}  // namespace gpool::scheduler
