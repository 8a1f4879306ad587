// ClusterState::RunAsFor: who a job's tasks run as on their workers.
//
// The committed state holds no users with Unix uid/gid mappings yet (issue
// 31 adds them, with the users and roles): until it does no mapping is
// known, and every bind leaves the identity to the worker's own policy
// (--task-user, `nobody` unless an operator says otherwise). When user
// records carry a mapping, this is the one place that turns the job's
// owner into the identity the dispatcher sends.
#include "control/state/cluster_state.h"

namespace gpool::state {

std::optional<RunAs> ClusterState::RunAsFor(const JobRecord& /*job*/) const { return std::nullopt; }

}  // namespace gpool::state
