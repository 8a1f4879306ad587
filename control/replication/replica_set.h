// OpenReplicaSet: the one place that decides which CommitLog a coordinator
// runs. No peers: a LocalLog (one replica, commit = fsync). Peers: a RaftLog
// over a PeerTransport listening for the other replicas. The coordinator sees
// either only as a CommitLog.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <zmq.hpp>

#include "control/log/commit_log.h"
#include "control/replication/peer_transport.h"
#include "protocol/base/clock.h"
#include "protocol/security/keys.h"
#include "storage/log_store.h"

namespace gpool::replication {

struct ReplicaSetOptions {
  // Empty `peers`: a single replica (LocalLog).
  uint64_t id = 0;                               // this replica's id, a key of `peers`
  std::map<uint64_t, std::string> peers;         // id -> peer endpoint, every replica
  std::map<uint64_t, std::string> peer_clients;  // id -> client endpoint, for redirects
  std::map<uint64_t, std::string> peer_workers;  // id -> worker endpoint, for workers' redirects
  std::string listen_endpoint;                   // where to listen for peers; empty: peers[id]
  bool join = false;                             // wait to be added by a running cluster (replica add)
  // Election timeout: [1, 2) x election_ticks ticks, 200-400 ms. Millisecond
  // ticks (with the loop sleeping exactly until the next one that matters)
  // give the randomized timeout 200 distinct values, so two followers rarely
  // time out together and split the vote. 200 ms (issue 49; was 300): 150 ms
  // met the failover target but cost 1-2 elections per run of
  // gpool-bench-e2e's 10,000-job burst on a 2-core host; 200 ms had none
  // there and a failover p99 of 417 ms (docs/operations.md 3.3).
  int64_t tick_ms = 1;
  int election_ticks = 200;   // --election-timeout-ms
  int heartbeat_ticks = 20;   // --raft-heartbeat-ms
  // Where snapshot image files are kept (the data dir; issue 49); empty:
  // inline in the log store.
  std::string snapshot_dir;
  std::string token;          // carried on peer messages; empty: none
  // CurveZMQ: this replica's key pair (empty secret: plaintext) and every
  // replica's public key by id, this one's included.
  security::KeyPair curve_keys;
  std::map<uint64_t, std::string> peer_keys;
  // Told of each replica the transport connects to and forgets (the
  // coordinator's KeyDirectory admits exactly those on the peer port).
  std::function<void(uint64_t id, const std::string& key)> on_peer_added;
  std::function<void(uint64_t id)> on_peer_removed;
  // PeerTransportOptions::replica_of_user_id.
  std::function<uint64_t(std::string_view user_id)> replica_of_user_id;
  const Clock* clock = &SystemClock::Get();
  // The state version this binary implements (control/state/state_version.h),
  // sent to the peers on every message; the coordinator sets it.
  uint32_t state_version = 0;
};

struct ReplicaSet {
  // Null for a single replica. Destroy the log first: it sends through it.
  std::unique_ptr<PeerTransport> transport;
  std::unique_ptr<log::CommitLog> log;
};

// `store` and `context` outlive the result. A replica whose own data dir
// says it was removed from the replica set is refused (FailedPrecondition,
// IsRemovedReplica): serving would only confuse clients.
// True for OpenReplicaSet's refusal of a removed replica, which its caller
// reports apart (gpool-coordinator exits with its own status).
bool IsRemovedReplica(const Status& status);

Result<ReplicaSet> OpenReplicaSet(const ReplicaSetOptions& options, storage::LogStore* store,
                                  zmq::context_t& context);

}  // namespace gpool::replication
