// Checks of an rGPU session's job spec (session_types.h), at the edge.
#pragma once

#include "protocol/base/status.h"
#include "protocol/types.h"

namespace gpool {

// Nothing to check for a job that is not a session. A session is one task
// group of one replica asking for GPUs (whole or a share), with an owner key
// (Z85), an idle timeout of 1 s to 7 days and a lease of 1 s to 7 days (or
// 0: the idle timeout). InvalidArgument naming the field otherwise.
Status ValidateSessionSpec(const JobSpec& spec);

}  // namespace gpool
