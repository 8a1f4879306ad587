#include "control/coordinator_options.h"

#include <unistd.h>

#include <charconv>
#include <optional>

#include "control/endpoints_file.h"
#include "control/principal.h"
#include "protocol/base/endpoint.h"
#include "protocol/http/http_server.h"
#include "control/state/state_version.h"

namespace gpool::control {

NodeRegistryOptions RegistryOptionsOf(const CoordinatorOptions& options, KeyDirectory* keys,
                                      ControlMetrics& metrics) {
  NodeRegistryOptions out;
  out.heartbeat_interval_ms = options.heartbeat_interval_ms;
  out.node_timeout_ms = options.node_timeout_ms;
  out.node_lost_ms = options.node_lost_ms;
  out.lease_ms = options.node_lease_ms;
  out.token = options.token;
  out.keys = keys;
  out.enrolment = options.worker_enrolment;
  out.coordinator_id = options.replica_id;
  out.limits.max_frame_bytes = options.max_frame_bytes;
  out.clock = options.clock;
  out.metrics = &metrics.workers;
  return out;
}

DispatcherOptions DispatcherOptionsOf(const CoordinatorOptions& options, ControlMetrics& metrics) {
  DispatcherOptions out;
  out.preempt_grace_ms = options.preempt_grace_ms;
  out.metrics = &metrics.workers;
  out.clock = options.clock;
  return out;
}

Result<std::pair<uint32_t, uint32_t>> ParseUidRange(const std::string& text) {
  const size_t dash = text.find('-');
  uint64_t first = 0;
  uint64_t last = 0;
  auto number = [](std::string_view part, uint64_t* out) {
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), *out);
    return !part.empty() && ec == std::errc() && end == part.data() + part.size();
  };
  if (dash == std::string::npos || !number(std::string_view(text).substr(0, dash), &first) ||
      !number(std::string_view(text).substr(dash + 1), &last)) {
    return Status::InvalidArgument("--uid-range: '" + text + "' is not FIRST-LAST (e.g. 200000-299999)");
  }
  if (first == 0 || first > last || last >= 4'294'967'295ull) {
    return Status::InvalidArgument("--uid-range: '" + text + "' must have 1 <= FIRST <= LAST < 4294967295");
  }
  // nobody is every daemon's uid: a task owner there is no owner at all.
  if (first <= 65534 && 65534 <= last) {
    return Status::InvalidArgument("--uid-range: '" + text + "' holds 65534 (nobody); pick a range above it");
  }
  return std::make_pair(static_cast<uint32_t>(first), static_cast<uint32_t>(last));
}

GatewayOptions GatewayOptionsOf(const CoordinatorOptions& options, const std::string& client_endpoint) {
  GatewayOptions out;
  out.token = options.token;
  out.admin_key = options.admin_key;
  out.replica_id = options.replica_id;
  out.client_address = client_endpoint;
  out.limits.max_frame_bytes = options.max_frame_bytes;
  out.max_spec_bytes = options.max_spec_bytes;
  out.spec_limits.max_grace_period_ms = options.max_grace_period_ms;
  out.uid_first = options.uid_first;
  out.uid_last = options.uid_last;
  out.max_sessions_per_user = options.max_sessions_per_user;
  out.max_inflight_per_key = options.max_inflight_per_key;
  out.max_exec_streams_per_user = options.max_exec_streams_per_user;
  return out;
}

SchedulerDriverOptions SchedulerOptionsOf(const CoordinatorOptions& options, ControlMetrics& metrics, int wake_fd) {
  SchedulerDriverOptions out;
  out.policy = options.scheduler_config;
  out.wall_clock = options.clock;
  out.background = true;
  out.interval_ms = options.schedule_interval_ms;
  out.metrics = &metrics.scheduling;
  if (wake_fd >= 0) {
    // The loop polls the eventfd, so a plan is proposed as soon as it is made.
    out.on_cycle_done = [wake_fd] {
      const uint64_t one = 1;
      (void)!write(wake_fd, &one, sizeof(one));
    };
  }
  return out;
}

replication::ReplicaSetOptions ReplicaSetOptionsOf(const CoordinatorOptions& options, KeyDirectory* keys) {
  replication::ReplicaSetOptions out = options.replicas;
  out.token = options.token;
  out.curve_keys = options.curve_keys;
  out.clock = options.clock;
  out.snapshot_dir = options.data_dir;  // beside the forked child's files: linked, not copied (issue 49)
  out.state_version = state::kStateVersion;  // what the leader's upgrade gate reads (issue 50)
  if (keys == nullptr) return out;
  // The replicas named on the command line are admitted before the peer port
  // binds: a handshake refused in between would never be retried by the
  // peer's libzmq.
  keys->SetReplicas(options.replicas.peer_keys);
  // The peers admitted on the peer port are the replicas the transport
  // connects to: the configuration's, as Raft learns it.
  out.on_peer_added = [keys](uint64_t id, const std::string& key) { keys->AddReplica(id, key); };
  out.on_peer_removed = [keys](uint64_t id) { keys->RemoveReplica(id); };
  out.replica_of_user_id = [keys](std::string_view user_id) -> uint64_t {
    auto principal = Principal::Parse(user_id);
    if (!principal || principal->kind != Principal::Kind::kReplica) return 0;
    uint64_t id = 0;
    const auto& name = principal->name;
    auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), id);
    if (error != std::errc() || end != name.data() + name.size()) return 0;
    // A rotated replica's old key past its grace: the connection it still
    // holds is refused frame by frame (issue 48).
    return keys->RetiredReplicaKeyExpired(id, principal->key) ? replication::kRefusedSender : id;
  };
  return out;
}

std::pair<std::string, std::string> CoordinatorContacts(const std::string& client_endpoint,
                                                        const log::ReplicationReport& report,
                                                        const KeyDirectory* keys, const std::string& public_key) {
  std::string endpoints = ReachableEndpoint(client_endpoint);
  std::string key_list = keys ? public_key : std::string();
  for (const auto& replica : report.replicas) {
    if (replica.id == report.self_id || replica.client_address.empty()) continue;
    const std::optional<std::string> key = keys ? keys->KeyOfReplica(replica.id) : std::optional<std::string>("");
    if (!key) continue;
    endpoints += "," + replica.client_address;
    if (keys) key_list += "," + *key;
  }
  return {std::move(endpoints), std::move(key_list)};
}

Status CheckHttpFlags(const CoordinatorOptions& options) {
  return http::CheckHttpTlsFlags(options.http_address,
                                 {options.http_cert, options.http_key, options.http_client_ca},
                                 options.http_insecure);
}

}  // namespace gpool::control
