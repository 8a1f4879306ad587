// The actions of a scheduling cycle (see config.h for what each does). Each
// reads and changes the session; the order comes from the configuration.
#pragma once

#include "control/scheduler/session.h"

namespace gpool::scheduler {

// What the job's gang would hold once placed (computed once, then cached).
const Amounts& GangDemand(const QueueTree& tree, WorkJob& job);

void Enqueue(Session& session);
void Allocate(Session& session);
void Backfill(Session& session);
void Preempt(Session& session);
void Reclaim(Session& session);

}  // namespace gpool::scheduler
