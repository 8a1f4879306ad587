// ClusterState::RunAsFor: who a job's tasks run as on their workers.
//
// The job's owner (the user its submission was authenticated as) with the
// Unix uid/gid its user record maps it to. No record (an --insecure
// cluster, or the --admin-key operator) leaves the identity to the worker's
// own policy (--task-user, `nobody` unless an operator says otherwise). A
// record without a uid (issue 48: made before uids were allocated) maps to
// 65534, nobody, which a worker refuses as a task owner (the task fails
// saying how to give the user a uid) rather than run it as its default,
// shared with every other such user.
#include "control/state/cluster_state.h"
#include "protocol/model/run_as.h"
#include "protocol/model/users.h"

namespace gpool::state {
namespace {

constexpr uint32_t kNobodyUid = 65534;

}  // namespace

std::optional<RunAs> ClusterState::RunAsFor(const JobRecord& job) const {
  const UserSpec* user = FindUser(job.spec.user);
  if (user == nullptr) return std::nullopt;
  RunAs run_as;
  if (user->uid < 0) {
    run_as.uid = run_as.gid = kNobodyUid;
    run_as.user = user->name;
    return run_as;
  }
  run_as.uid = static_cast<uint32_t>(user->uid);
  run_as.gid = static_cast<uint32_t>(user->gid < 0 ? user->uid : user->gid);
  run_as.user = user->name;
  return run_as;
}

}  // namespace gpool::state
