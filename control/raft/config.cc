#include "control/raft/config.h"

#include <string>

namespace gpool::raft {

Status Config::Validate() const {
  if (id == 0) return Status::InvalidArgument("raft config: id must be nonzero");
  for (uint64_t p : peers) {
    if (p == 0) return Status::InvalidArgument("raft config: peers must not contain 0");
  }
  if (heartbeat_tick <= 0) return Status::InvalidArgument("raft config: heartbeat_tick must be > 0");
  if (election_tick <= heartbeat_tick) {
    return Status::InvalidArgument("raft config: election_tick (" + std::to_string(election_tick) +
                                   ") must be greater than heartbeat_tick (" + std::to_string(heartbeat_tick) +
                                   ")");
  }
  if (max_msg_entries == 0) return Status::InvalidArgument("raft config: max_msg_entries must be > 0");
  if (max_msg_bytes == 0) return Status::InvalidArgument("raft config: max_msg_bytes must be > 0");
  if (max_inflight == 0) return Status::InvalidArgument("raft config: max_inflight must be > 0");
  return Status::Ok();
}

}  // namespace gpool::raft
