// CoordinatorOptions: gpool-coordinator's settings (control/main.cc fills
// them from flags and files), and how they map onto each component's own
// options. The mapping lives here so the composition root (coordinator.cc)
// only builds and connects components, and a new setting is one field and
// one line here.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "control/alert_driver.h"
#include "control/scale_driver.h"
#include "control/dispatcher.h"
#include "control/gateway.h"
#include "control/health/policy_config.h"
#include "control/log/commit_log.h"
#include "control/metrics/control_metrics.h"
#include "control/node_registry.h"
#include "control/replication/replica_set.h"
#include "control/scheduler_driver.h"
#include "control/security/key_directory.h"
#include "control/state/retention.h"
#include "control/usage_driver.h"
#include "protocol/base/clock.h"
#include "protocol/security/keys.h"
#include "protocol/validate.h"

namespace gpool::control {

struct CoordinatorOptions {
  std::string data_dir = "/var/lib/gpool/coordinator";
  std::string client_endpoint = "tcp://127.0.0.1:7400";  // clients (ROUTER); port 0 or * = ephemeral
  std::string worker_endpoint = "tcp://127.0.0.1:7401";  // workers (ROUTER)
  std::string replica_id = "coordinator-1";
  std::string token;                                     // empty: no authentication
  // CurveZMQ (issue 31, docs/operations.md "Keys"): this replica's key pair.
  // With a secret key every port (clients, workers, peers) is a CURVE server
  // behind the ZAP handler; an empty one is --insecure (plaintext).
  security::KeyPair curve_keys;
  // The bootstrap admin's public key (--admin-key): admitted on the client
  // port as user "admin" until users are managed in the committed state.
  std::string admin_key;
  WorkerEnrolment worker_enrolment = WorkerEnrolment::kAdmission;
  scheduler::SchedulerConfig scheduler_config;
  // The health policy and webhook sinks ([health] sections of the same file).
  health::HealthPolicyConfig health_config;
  // Where scheduler_config came from; re-read when *reload_scheduler_config
  // is set (SIGHUP). A file that no longer parses leaves the running config.
  std::string scheduler_config_path;
  std::atomic<bool>* reload_scheduler_config = nullptr;
  uint32_t heartbeat_interval_ms = 1000;
  int64_t node_timeout_ms = 10'000;
  int64_t node_lost_ms = 60'000;   // silence after which a node's tasks are lost and requeued
  uint32_t node_lease_ms = 20'000;  // how long a worker's tasks run without an acknowledged heartbeat
  int64_t schedule_interval_ms = 10;
  uint32_t preempt_grace_ms = 10'000;
  // A snapshot once at least snapshot_every entries AND snapshot_log_ratio
  // times the last snapshot's bytes were logged since it (snapshot_schedule.h).
  uint64_t snapshot_every = 10'000;
  double snapshot_log_ratio = 1.0;
  size_t max_frame_bytes = 4 * 1024 * 1024;
  uint64_t max_spec_bytes = kDefaultMaxSpecBytes;  // encoded; larger specs are ResourceExhausted
  uint32_t max_grace_period_ms = SpecLimits{}.max_grace_period_ms;  // a job's grace_period_ms at most
  // --uid-range (issue 48): where uids of users created without one come from.
  uint32_t uid_first = 200'000;
  uint32_t uid_last = 299'999;
  // Watches (issue 48, finding 6; control/watch/watch_hub.h): per caller,
  // in all, and the slots only admins may take.
  size_t max_watches_per_user = 1000;
  size_t max_watches = 100'000;
  size_t watch_admin_reserve = 1000;
  uint32_t max_sessions_per_user = 16;  // rGPU sessions open at once per user (admins exempt)
  // Issue 48: client connections one key may hold (counted from a
  // connection's first message; secure mode only), requests one key may
  // have unanswered, and `gpool exec` commands one user may have open.
  // Admins are not held to any of them.
  uint32_t max_connections_per_key = 64;
  uint32_t max_inflight_per_key = 256;
  uint32_t max_exec_streams_per_user = 32;
  AlertRules alerts;  // queue wait, quota, low utilisation (alert_driver.h)
  ScaleDriverOptions scaling;  // how often elastic jobs' scale rules are evaluated (scale_driver.h)
  state::RetentionPolicy retention;               // finished jobs kept (control/state/retention.h)
  UsageOptions usage;                             // usage checkpoints and record retention (usage_driver.h)
  // A full disk (disk_full_mode.h): at or below this much free space on the
  // data dir's file system, writes are refused until space returns; a full
  // data dir is looked at again every disk_retry_ms.
  uint64_t disk_reserve_bytes = 64ull << 20;
  int64_t disk_retry_ms = 1000;
  const Clock* clock = &SystemClock::Get();

  // The HTTP port (docs/operations.md "Metrics and the dashboard"):
  // host:port, port 0 for an ephemeral one (written to the endpoints file);
  // empty: no HTTP at all (the default: issue 48).
  std::string http_address;
  // TLS for it (--http-cert, --http-key, --http-client-ca), or plain HTTP
  // with --http-insecure; without either no address may serve
  // (CheckHttpFlags below).
  std::string http_cert;
  std::string http_key;
  std::string http_client_ca;
  bool http_insecure = false;
  bool metrics_per_gpu = true;  // per-GPU series on /metrics
  std::string version;          // for gpool_coordinator_info

  // Replication: empty `replicas.peers` runs a single replica (LocalLog).
  // replicas.token and replicas.clock are taken from `token` and `clock`.
  replication::ReplicaSetOptions replicas;

  // --snapshot-on-loop (issue 49): encode snapshots and exports on the loop
  // thread, as before forked snapshots: for hosts where fork() is refused
  // or too costly, and as the baseline of gpool-bench-snapshot-loop --cluster.
  bool snapshot_on_loop = false;
};

// --uid-range FIRST-LAST: 1 <= FIRST <= LAST < 4294967295, and neither
// root (0) nor nobody (65534) inside; else InvalidArgument saying why.
Result<std::pair<uint32_t, uint32_t>> ParseUidRange(const std::string& text);

// Each component's options from the coordinator's. `keys` is null on an
// --insecure coordinator; `metrics` outlives the components.
NodeRegistryOptions RegistryOptionsOf(const CoordinatorOptions& options, KeyDirectory* keys,
                                      ControlMetrics& metrics);
DispatcherOptions DispatcherOptionsOf(const CoordinatorOptions& options, ControlMetrics& metrics);
GatewayOptions GatewayOptionsOf(const CoordinatorOptions& options, const std::string& client_endpoint);
SchedulerDriverOptions SchedulerOptionsOf(const CoordinatorOptions& options, ControlMetrics& metrics, int wake_fd);
// The replica set's, with the peer port's admissions kept in `keys` (when secured).
replication::ReplicaSetOptions ReplicaSetOptionsOf(const CoordinatorOptions& options, KeyDirectory* keys);

// Where a task's `gpool` finds the coordinator: this replica's client
// endpoint first, then every other replica's whose client address (and,
// secured, key) is known, so it follows a failover. Returns the endpoints
// and the matching public keys, each comma separated (keys empty when insecure).
std::pair<std::string, std::string> CoordinatorContacts(const std::string& client_endpoint,
                                                        const log::ReplicationReport& report,
                                                        const KeyDirectory* keys, const std::string& public_key);


// The HTTP port's flags (issue 48, http::CheckHttpTlsFlags): with an
// http_address, TLS (cert and key) or http_insecure, never neither nor
// both; without one, none of them. main.cc refuses to start with its
// message; Coordinator::StartHttp checks again for in-process coordinators.
Status CheckHttpFlags(const CoordinatorOptions& options);

}  // namespace gpool::control
