// A replica's CurveZMQ key as the replicated state records it once an admin
// rotated it (issue 48: `gpool admin replica rotate-key ID --replica-key
// new.pub --grace 1h`).
//
// The replica configuration (Raft's ConfChange entries, --peer-keys) names
// each replica's key when it joins; a rotation is a normal command on top of
// it (ReplicaKeyCmd), so it needs no change to Raft's own entries and old
// logs and snapshots decode as before (no record: the configuration's key).
// The record keeps the key the rotation replaced: admitted as that replica on
// the peer port, and tried as its server key by the other replicas'
// transports, until `previous_until_ms` (the rotating command's time, the
// leader's clock, plus the grace); 0: not at all (a rotation without grace,
// the path for a key that leaked).
#pragma once

#include <cstdint>
#include <string>

namespace gpool::state {

struct ReplicaKeyRecord {
  uint64_t replica_id = 0;
  std::string key;           // Z85: the replica's key from the rotation on
  std::string previous_key;  // Z85: the key it replaced
  int64_t previous_until_ms = 0;  // wall ms until which previous_key is still admitted
  // Whether the replaced key is still admitted at wall time now_ms.
  bool PreviousAdmitted(int64_t now_ms) const { return !previous_key.empty() && now_ms < previous_until_ms; }
  template <typename V>
  void Fields(V& v) {
    v.Required("replica_id", replica_id);
    v.Required("key", key);
    v.Optional("previous_key", previous_key);
    v.Optional("previous_until_ms", previous_until_ms);
  }
  bool operator==(const ReplicaKeyRecord&) const = default;
};

// The longest grace a rotation may give the replaced key (as for node and
// user keys): 30 days.
inline constexpr uint64_t kMaxReplicaKeyGraceMs = 30ull * 24 * 3600 * 1000;

}  // namespace gpool::state
