// Who may use, and who may grant, the priority classes above medium (issue
// 50), as pure functions of the caller, the class, the queue and the
// committed state, beside Authorize (authz.h), which they follow.
//
// Low and medium are open to every job a caller may submit. High and system
// run in a queue only once granted to it or to an ancestor (a grant covers
// the subtree; ClusterState::ClassGranted). Admins (a user with the admin
// role, the --admin-key, --insecure) are not held to grants: they may grant
// themselves anything, so a grant would be ceremony; the rule is what
// separates members and queue-admins from the classes that take capacity
// from others.
//
// Granting: admins grant or revoke high and system on any queue; a
// queue-admin grants or revokes high on the queues strictly below its grant
// (as it changes their quotas, never its own queue's), and never system.
//
// Checked at the edge only (the gateway): a replayed log submits the same
// jobs whatever the grants were when it was written.
#pragma once

#include <string>
#include <string_view>

#include "control/authz.h"
#include "control/state/cluster_state.h"
#include "protocol/base/status.h"

namespace gpool::control {

// Ok, or PermissionDenied naming the class and the queue (and how to get a
// grant). An unknown class is left to ValidateJobSpec.
Status CheckSubmitClass(const Actor& actor, std::string_view priority_class, const std::string& queue,
                        const state::ClusterState& state);

// Whether `actor` may grant or revoke `priority_class` on `queue`; a refusal
// names what is missing, as Authorize's does.
Decision AuthorizeClassGrant(const Actor& actor, std::string_view priority_class, const std::string& queue,
                             const state::ClusterState& state);

}  // namespace gpool::control
