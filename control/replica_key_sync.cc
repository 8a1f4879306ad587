#include "control/replica_key_sync.h"

#include <variant>

#include <spdlog/spdlog.h>

namespace gpool::control {

void ReplicaKeySync::AfterApply(const state::ClusterState& state, uint64_t index, const state::Command& command,
                                const state::ApplyResult& result) {
  const auto* rotation = std::get_if<state::ReplicaKeyCmd>(&command.body);
  if (rotation == nullptr || !result.status.ok()) return;
  auto record = state.replica_keys().find(rotation->replica_id);
  if (record == state.replica_keys().end()) return;
  spdlog::info("replica key rotated replica={} index={} grace_ms={} previous_until_ms={}", rotation->replica_id,
               index, rotation->grace_ms, record->second.previous_until_ms);
  Push(record->second);
}

void ReplicaKeySync::AfterRestore(const state::ClusterState& state) {
  for (const auto& [id, record] : state.replica_keys()) Push(record);
}

void ReplicaKeySync::Push(const state::ReplicaKeyRecord& record) {
  // The retired key first: the log's transport then tells the directory the
  // new key (PeerTransportOptions::on_peer_added), and no handshake sees
  // neither admitted in between.
  if (keys_ != nullptr) keys_->RetireReplicaKey(record.replica_id, record.previous_key, record.previous_until_ms);
  if (log_ != nullptr) {
    log_->RotateReplicaKey(record.replica_id, record.key, record.previous_key, record.previous_until_ms);
  }
}

}  // namespace gpool::control
