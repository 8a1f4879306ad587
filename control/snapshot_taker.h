// MaybeTakeSnapshot: the periodic snapshot, when SnapshotSchedule says one is
// due. The state is encoded and saved through the commit log, which then
// drops the entries it covers. A data dir that refuses writes (a full disk:
// disk_full_mode.h) skips it; a failed write is that mode's business too.
// On the coordinator's loop thread (off-loop snapshots: issue 49).
#pragma once

#include "control/disk_full_mode.h"
#include "control/log/commit_log.h"
#include "control/metrics/metric_sets.h"
#include "control/snapshot_schedule.h"
#include "control/state/cluster_state.h"

namespace gpool::control {

// metrics may be null.
void MaybeTakeSnapshot(SnapshotSchedule& schedule, const state::ClusterState& state, log::CommitLog& log,
                       DiskFullMode& disk, ReplicationMetrics* metrics);

}  // namespace gpool::control
