// ClusterState::RunAsFor: who a job's tasks run as on their workers.
//
// The job's owner (the user its submission was authenticated as) with the
// Unix uid/gid its user record maps it to. No record (an --insecure
// cluster, or the --admin-key operator) leaves the identity to the worker's
// own policy (--task-user, `nobody` unless an operator says otherwise). A
// record without a uid (issue 48: made before uids were allocated) is
// marked no_uid, and the worker refuses the task rather than run it as its
// default, shared with every other such user.
#include "control/state/cluster_state.h"
#include "protocol/model/run_as.h"
#include "protocol/model/users.h"

namespace gpool::state {

std::optional<RunAs> ClusterState::RunAsFor(const JobRecord& job) const {
  const UserSpec* user = FindUser(job.spec.user);
  if (user == nullptr) return std::nullopt;
  RunAs run_as;
  if (user->uid < 0) {
    run_as.user = user->name;
    run_as.no_uid = true;
    return run_as;
  }
  run_as.uid = static_cast<uint32_t>(user->uid);
  run_as.gid = static_cast<uint32_t>(user->gid < 0 ? user->uid : user->gid);
  run_as.user = user->name;
  return run_as;
}

}  // namespace gpool::state
