// An rGPU session as clients see it (SessionInfo), derived from its job.
//
// Apply records facts only (the job's and task's states, the eviction, the
// lease's close reason, the server's endpoint); which of the session states
// that makes is decided here, at the edge, so the rule can improve without
// rewriting the log:
//   Queued     its task waits for the scheduler (the reason says why)
//   Placed     bound to a node, its server not yet listening
//   Open       its server listens at `endpoint`
//   Closing    closed (by its owner or an expired lease), its server stopping
//   Closed     closed by its owner, or its server ended by itself
//   Expired    its lease was not renewed, its idle timeout or its TTL passed
//   Preempted  stopped for a job of a higher class (sessions are not requeued)
//   Failed     its node was lost, or its server failed
// Pure functions.
#pragma once

#include <cstdint>

#include "control/state/records.h"
#include "protocol/session_types.h"

namespace gpool::control {

// state empty for a job that is not a session. `now_ms` (wall) counts the
// GPU-seconds of a session still open; 0: only up to its finish.
SessionInfo ToSessionInfo(const state::JobRecord& job, int64_t now_ms = 0);

}  // namespace gpool::control
