// StoredSnapshot: how a replicated coordinator keeps a snapshot in its
// LogStore. The Raft core needs the configuration in force at the snapshot's
// index to restart (raft::InitialState), and storage::SnapshotMeta has only
// index and term, so the bytes stored are this pair: the voters and the
// state-machine image. A single-replica coordinator (LocalLog) stores the bare
// image instead; the two data-dir kinds are not interchangeable, and reading
// one as the other is a typed error, not a crash.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "control/raft/entry.h"
#include "protocol/base/status.h"
#include "protocol/wire.h"

namespace gpool::replication {

struct StoredSnapshot {
  raft::ConfState conf;
  std::string state;  // ClusterState::Snapshot() bytes

  template <typename V>
  void Fields(V& v) {
    v.Required("conf", conf);
    v.Required("state", state);
  }
};

// Decode limits for whole-cluster images: they guard against nonsense
// lengths, not against big clusters.
wire::DecodeLimits SnapshotDecodeLimits();

std::string EncodeStoredSnapshot(const StoredSnapshot& snapshot);
// Malformed when the bytes are not a StoredSnapshot (for example the bare
// image a single-replica coordinator wrote).
Result<StoredSnapshot> DecodeStoredSnapshot(std::string_view bytes);

}  // namespace gpool::replication
