// The scheduler: a pure function from a ClusterView to a Plan.
//
// No sockets, clocks, storage or randomness: the same inputs always give the
// same plan, so it runs unchanged in the coordinator, the simulator and the
// benches, and its tests are tables of inputs and expected plans.
//
// A cycle runs the actions its SchedulerConfig lists (see config.h) over one
// working copy of the cluster, so each action sees what the ones before it
// placed or evicted. The plan carries binds (placements to commit), evictions
// (tasks to stop so a preemptor or reclaiming queue can run; the victims are
// requeued) and, for every job left waiting, its reasons aggregated over
// nodes and queues ("12 nodes: insufficient GPUs", "queue team-a at
// capability for gpu (16 of 16)").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"
#include "control/scheduler/config.h"
#include "topology/cluster_view.h"
#include "topology/pending_reason.h"
#include "topology/plan.h"

namespace gpool::scheduler {

// The plan types are topology's: one type from here to the Raft log.
using topology::Eviction;
using topology::PendingReasons;
using topology::Placement;
using topology::Plan;

Plan Schedule(const topology::ClusterView& view, const SchedulerConfig& config);

}  // namespace gpool::scheduler
