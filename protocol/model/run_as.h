// Who a task runs as, as the coordinator's state decides it (ClusterState::
// RunAsFor) and a bind carries it to the worker.
#pragma once

#include <cstdint>
#include <string>

namespace gpool {

// Who a task runs as (issue 31): the Unix identity the coordinator maps the
// job's owner to. `user` names it in logs; an empty `user` means no mapping
// was known, and the worker runs the task as its own default (its
// --task-user, `nobody` unless told otherwise). uid 0 is refused by a worker
// not explicitly allowed to run tasks as root.
//
// Issue 48: `no_uid` marks an owner that is a user but has no uid (one
// created before uids were allocated, whose job was queued before the
// upgrade): the worker refuses the task (FailedPrecondition) instead of
// running it as its default, shared with every other such owner. A worker
// refuses a run_as of 65534 (nobody) the same way.
struct RunAs {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string user;
  bool no_uid = false;
  bool set() const { return !user.empty(); }
  bool operator==(const RunAs&) const = default;
  template <typename V>
  void Fields(V& v) {
    v.Required("uid", uid);
    v.Required("gid", gid);
    v.Required("user", user);
    v.Optional("no_uid", no_uid);
  }
};

}  // namespace gpool
