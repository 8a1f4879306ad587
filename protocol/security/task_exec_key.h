// The exec credential of one task attempt (issue 48).
//
// A job's secret (JobRecord::exec_token) never leaves the coordinator: each
// bound task gets a CURVE secret key of its own, derived from it as
//
//   HMAC-SHA256(key = job secret, "gpool task exec v1" 0x00 job index attempt)
//
// (job as 8, index and attempt as 4 big-endian bytes), clamped as a
// Curve25519 scalar and Z85-encoded. Derived, not drawn, so nothing per task
// is replicated: every replica computes the same key from committed state,
// and a new attempt (a requeue, a restart) gets a new one. A node that ran
// one task holds a key that names that attempt only; the coordinator admits
// it while that attempt is bound or running (control/security/key_sync.h).
//
// The key also names its task in the ZAP User-Id ("task|<name>|<key>"):
// TaskExecName is TaskId::ToString ("17.0", "17.0#2"), which
// ParseTaskExecName reads back.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "protocol/base/ids.h"
#include "protocol/base/status.h"

namespace gpool::security {

// The task's secret key, 40 Z85 characters (KeyPairOfSecret gives its public
// half). InvalidArgument when the job has no secret (a job recorded before
// exec credentials existed): such a task gets none.
Result<std::string> TaskExecSecret(std::string_view job_secret, const TaskId& task);

std::string TaskExecName(const TaskId& task);
// "J.I" or "J.I#A" with decimal numbers and nothing else; nullopt otherwise.
std::optional<TaskId> ParseTaskExecName(std::string_view name);

}  // namespace gpool::security
