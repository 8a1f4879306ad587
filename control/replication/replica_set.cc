#include "control/replication/replica_set.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "control/log/local_log.h"
#include "control/replication/raft_log.h"

namespace gpool::replication {

namespace {

// Part of the refusal's message, and how IsRemovedReplica knows it.
constexpr std::string_view kRemovedMarker = " is not in the configuration its data dir records (it was removed)";

}  // namespace

bool IsRemovedReplica(const Status& status) {
  return status.code() == StatusCode::kFailedPrecondition &&
         status.message().find(kRemovedMarker) != std::string::npos;
}

Result<ReplicaSet> OpenReplicaSet(const ReplicaSetOptions& options, storage::LogStore* store,
                                  zmq::context_t& context) {
  ReplicaSet set;
  if (options.peers.empty()) {
    GPOOL_ASSIGN_OR_RETURN(set.log, log::LocalLog::Open(store, options.snapshot_dir));
    return set;
  }
  auto self = options.peers.find(options.id);
  if (self == options.peers.end()) {
    return Status::InvalidArgument("replica id " + std::to_string(options.id) + " is not in the peer list");
  }
  PeerTransportOptions transport_options;
  transport_options.listen_endpoint = options.listen_endpoint.empty() ? self->second : options.listen_endpoint;
  transport_options.token = options.token;
  transport_options.curve_keys = options.curve_keys;
  transport_options.on_peer_added = options.on_peer_added;
  transport_options.on_peer_removed = options.on_peer_removed;
  transport_options.replica_of_user_id = options.replica_of_user_id;
  transport_options.clock = options.clock;
  RaftLogOptions raft_options;
  for (const auto& [id, endpoint] : options.peers) {
    raft_options.voters.push_back(id);
    auto client = options.peer_clients.find(id);
    auto worker = options.peer_workers.find(id);
    raft_options.directory.push_back(ReplicaAddress{id, endpoint,
                                                    client == options.peer_clients.end() ? "" : client->second,
                                                    worker == options.peer_workers.end() ? "" : worker->second,
                                                    options.peer_keys.count(id) ? options.peer_keys.at(id) : ""});
  }
  GPOOL_ASSIGN_OR_RETURN(set.transport, PeerTransport::Open(context, transport_options));
  raft_options.id = options.id;
  raft_options.join = options.join;
  raft_options.tick_ms = options.tick_ms;
  raft_options.election_ticks = options.election_ticks;
  raft_options.heartbeat_ticks = options.heartbeat_ticks;
  raft_options.clock = options.clock;
  raft_options.snapshot_dir = options.snapshot_dir;
  raft_options.state_version = options.state_version;
  GPOOL_ASSIGN_OR_RETURN(std::unique_ptr<RaftLog> raft, RaftLog::Open(raft_options, store, set.transport.get()));
  const std::vector<uint64_t> voters = raft->info().voters;
  if (!options.join && !voters.empty() && std::find(voters.begin(), voters.end(), options.id) == voters.end()) {
    return Status::FailedPrecondition(
        "replica " + std::to_string(options.id) + std::string(kRemovedMarker) +
        "; to bring it back, add it again with 'gpool admin replica add' and start it with --join and an empty "
        "data dir");
  }
  set.log = std::move(raft);
  return set;
}

}  // namespace gpool::replication
