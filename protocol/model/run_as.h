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
struct RunAs {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string user;
  bool set() const { return !user.empty(); }
  bool operator==(const RunAs&) const = default;
  template <typename V>
  void Fields(V& v) {
    v.Required("uid", uid);
    v.Required("gid", gid);
    v.Required("user", user);
  }
};

}  // namespace gpool
