// ClusterState::RunAsFor: who a job's tasks run as on their workers.
//
// The job's owner (the user its submission was authenticated as) with the
// Unix uid/gid its user record maps it to. No record, or one without a
// uid, leaves the identity to the worker's own policy (--task-user,
// `nobody` unless an operator says otherwise): a task never runs as an
// identity nobody mapped.
#include "control/state/cluster_state.h"
#include "protocol/model/run_as.h"
#include "protocol/model/users.h"

namespace gpool::state {

std::optional<RunAs> ClusterState::RunAsFor(const JobRecord& job) const {
  const UserSpec* user = FindUser(job.spec.user);
  if (user == nullptr || user->uid < 0) return std::nullopt;
  RunAs run_as;
  run_as.uid = static_cast<uint32_t>(user->uid);
  run_as.gid = static_cast<uint32_t>(user->gid < 0 ? user->uid : user->gid);
  run_as.user = user->name;
  return run_as;
}

}  // namespace gpool::state
