// ReplicaKeySync: a rotated replica key (issue 48; state::ReplicaKeyRecord)
// made effective on this replica as the rotation commits: the peer port's
// key directory admits the new key as that replica, and the replaced one
// until its deadline; the replicated log's directory names the new key and
// its transport pins it, trying the replaced one during the grace
// (CommitLog::RotateReplicaKey). Every replica applies the same entry, so
// all of them agree on the key and the deadline (the leader's clock in the
// command, as for node keys).
//
// Not thread-safe: the coordinator's loop calls it. It lives in control/,
// not control/security/, because it drives the replicated log as well as the
// key directory (security may not include the log: CheckLayers.cmake).
#pragma once

#include <cstdint>

#include "control/log/commit_log.h"
#include "control/security/key_directory.h"
#include "control/state/apply_listener.h"
#include "control/state/replica_keys.h"

namespace gpool::control {

class ReplicaKeySync final : public state::ApplyListener {
 public:
  // keys: null on an insecure cluster (the log is still told: a no-op for
  // a single replica's log).
  ReplicaKeySync(KeyDirectory* keys, log::CommitLog* log) : keys_(keys), log_(log) {}

  void AfterApply(const state::ClusterState& state, uint64_t index, const state::Command& command,
                  const state::ApplyResult& result) override;
  // Every record again: at start (after the data dir's state was replayed)
  // and when a snapshot from the leader replaced the state.
  void AfterRestore(const state::ClusterState& state) override;

 private:
  void Push(const state::ReplicaKeyRecord& record);

  KeyDirectory* keys_;
  log::CommitLog* log_;
};

}  // namespace gpool::control
