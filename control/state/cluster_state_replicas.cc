// ClusterState: an admin's rotation of a replica's CurveZMQ key (issue 48;
// replica_keys.h). The key directory and the peer transport follow the
// record (control/replica_key_sync.h); the state only keeps it.
#include <string>

#include "control/state/cluster_state.h"
#include "protocol/validate_users.h"

namespace gpool::state {

ApplyResult ClusterState::ApplyReplicaKey(int64_t now, const ReplicaKeyCmd& cmd) {
  ApplyResult result;
  const std::string who = "replica " + std::to_string(cmd.replica_id);
  // The gateway validated these; a replayed or forged entry is refused here
  // too, changing nothing, rather than leaving a replica unreachable.
  if (cmd.replica_id == 0) {
    result.status = Status::InvalidArgument("replica_id: must be a positive integer");
  } else if (!IsZ85Key(cmd.key) || !IsZ85Key(cmd.previous_key)) {
    result.status = Status::InvalidArgument(who + ": a replica key is a 40-character Z85 CurveZMQ public key");
  } else if (cmd.key == cmd.previous_key) {
    result.status = Status::AlreadyExists(who + " already has this key; nothing was changed");
  } else if (cmd.grace_ms > kMaxReplicaKeyGraceMs) {
    result.status = Status::InvalidArgument("grace: at most 30 days");
  }
  if (!result.status.ok()) return result;
  ReplicaKeyRecord record;
  record.replica_id = cmd.replica_id;
  record.key = cmd.key;
  // One key in retirement at a time: a second rotation replaces the first's,
  // and one without a grace ends any earlier grace at once. The replaced key
  // is kept either way: it says what the rotation replaced.
  record.previous_key = cmd.previous_key;
  record.previous_until_ms = cmd.grace_ms > 0 ? now + static_cast<int64_t>(cmd.grace_ms) : 0;
  replica_keys_[cmd.replica_id] = std::move(record);
  return result;
}

}  // namespace gpool::state
