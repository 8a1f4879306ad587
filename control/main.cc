// gpool-coordinator: flags -> CoordinatorOptions -> Coordinator::Run.
#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <iostream>
#include <iterator>

#include <cxxopts.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "control/coordinator.h"
#include "control/coordinator_options.h"
#include "control/health/policy_config.h"
#include "control/node_registry.h"
#include "control/replication/peer_list.h"
#include "control/replication/replica_set.h"
#include "control/snapshot_restore.h"
#include "protocol/base/endpoint.h"
#include "protocol/base/fd_limit.h"
#include "protocol/base/token_file.h"
#include "protocol/messages_worker.h"
#include "protocol/security/keys.h"

// Exit codes (docs/operations.md 3.2; deploy/systemd/gpool-coordinator.service
// restarts on 1 and not on 2, 3 or 4): 0 stopped by a signal; 1 failed in a
// way a restart may fix; 2 bad command line or config file; 3 the data dir or
// token file cannot be used as it is; 4 this replica was removed from the
// replica set (its removal committed while it ran, or its data dir records it).
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitPermanent = 3;
constexpr int kExitRemoved = 4;

namespace {

std::atomic<bool> g_stop{false};

std::atomic<bool> g_reload_scheduler{false};

void OnSignal(int) { g_stop.store(true); }
void OnHangup(int) { g_reload_scheduler.store(true); }

}  // namespace

// --peer-keys ID=FILE,...: which replica's public key is in which file.
static gpool::Result<std::map<uint64_t, std::string>> ParsePeerKeyFiles(const std::string& text) {
  std::map<uint64_t, std::string> files;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string entry = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    const size_t eq = entry.find('=');
    auto id = eq == std::string::npos ? gpool::Result<uint64_t>(gpool::Status::InvalidArgument("no '='"))
                                      : gpool::ParseReplicaId(entry.substr(0, eq));
    if (!id.ok() || eq + 1 >= entry.size()) {
      return gpool::Status::InvalidArgument("--peer-keys: '" + entry + "' is not ID=FILE");
    }
    files[*id] = entry.substr(eq + 1);
  }
  return files;
}

// Each worker and client connection holds a descriptor: take what the hard
// limit allows (no privilege needed) instead of the usual soft 1,024, and
// say so when that still caps how many nodes this replica can serve.
static void RaiseDescriptorLimit() {
  constexpr uint64_t kWanted = 1 << 16;
  constexpr uint64_t kFewest = 4096;
  auto limit = gpool::RaiseOpenFileLimit(kWanted);
  if (!limit.ok()) {
    spdlog::warn("cannot read the open file limit error=\"{}\"", limit.status().ToString());
  } else if (limit->now < kFewest) {
    spdlog::warn("open file limit is low limit={} hard_limit={}: each worker and client connection needs one; "
                 "raise the hard limit (LimitNOFILE= in the systemd unit, or ulimit -Hn) for clusters of thousands "
                 "of nodes", limit->now, limit->hard);
  } else if (limit->now > limit->before) {
    spdlog::info("raised the open file limit from={} to={}", limit->before, limit->now);
  }
}

// --restore-snapshot: writes the data dir and reports what it holds; no
// ports, keys or logger (it runs before a coordinator ever starts).
static int RestoreSnapshot(const cxxopts::ParseResult& args) {
  gpool::control::RestoreOptions restore;
  restore.snapshot_file = args["restore-snapshot"].as<std::string>();
  restore.data_dir = args["data-dir"].as<std::string>();
  if (args.count("snapshot-verify-key")) restore.verify_key_file = args["snapshot-verify-key"].as<std::string>();
  restore.now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  if (args.count("peers")) {
    auto peers = gpool::replication::ParsePeerList(args["peers"].as<std::string>(), "--peers");
    if (!peers.ok()) {
      std::cerr << "gpool-coordinator: " << peers.status().message() << "\n";
      return kExitUsage;
    }
    for (const auto& [id, endpoint] : *peers) restore.voters.push_back(id);
  }
  auto report = gpool::control::RestoreDataDir(restore);
  if (!report.ok()) {
    std::cerr << "gpool-coordinator: cannot restore " << restore.snapshot_file << ": " << report.status().ToString()
              << "\n";
    return report.status().code() == gpool::StatusCode::kIoError ? kExitFailure : kExitPermanent;
  }
  std::cout << "restored " << restore.data_dir << " from " << restore.snapshot_file << ": index " << report->index
            << ", " << report->jobs << " jobs, " << report->nodes << " nodes, " << report->state_bytes
            << " bytes of state; "
            << (restore.voters.empty() ? std::string("a single replica")
                                       : "a replica of a cluster of " + std::to_string(restore.voters.size()))
            << ", starting from term " << report->term << " and job id " << report->first_job_id << "\n";
  // Issue 48: say what the signature proved, or that it proved nothing.
  if (report->verified) {
    std::cout << "signature verified: signed by snapshot key " << report->key_id << "\n";
  } else if (!report->key_id.empty()) {
    std::cout << "note: " << restore.snapshot_file << " is signed by snapshot key " << report->key_id
              << " but the signature was not verified (no --snapshot-verify-key)\n";
  }
  return 0;
}

int main(int argc, char** argv) {
  // Issue 48: whatever the coordinator writes (LevelDB's files, the Raft
  // log, snapshots, the endpoints file) holds every job's environment:
  // 0600 files and 0700 dirs, whatever umask it was started with.
  umask(077);
  cxxopts::Options cli("gpool-coordinator", "gpool control plane: admits, schedules and dispatches jobs");
  gpool::control::CoordinatorOptions defaults;
  // clang-format off
  cli.add_options()
    ("data-dir", "Directory for the LevelDB state (log, snapshots) and the endpoints file",
     cxxopts::value<std::string>()->default_value(defaults.data_dir))
    ("client-addr", "ZeroMQ endpoint for clients (use port 0 for an ephemeral port)",
     cxxopts::value<std::string>()->default_value(defaults.client_endpoint))
    ("worker-addr", "ZeroMQ endpoint for workers",
     cxxopts::value<std::string>()->default_value(defaults.worker_endpoint))
    ("id", "Replica id shown in status and logs; with --peers, this replica's number in the peer list",
     cxxopts::value<std::string>()->default_value(defaults.replica_id))
    ("peers", "Replicated mode: every replica's peer (Raft) endpoint, this one included, as "
     "ID=ENDPOINT,... (e.g. 1=tcp://10.0.0.1:7402,2=tcp://10.0.0.2:7402,3=tcp://10.0.0.3:7402). "
     "Without it the coordinator runs as a single replica", cxxopts::value<std::string>())
    ("peer-clients", "Replicated mode: every replica's client endpoint as ID=ENDPOINT,...; followers name the "
     "leader's in NotLeader replies so clients go straight to it", cxxopts::value<std::string>())
    ("peer-addr", "Replicated mode: where this replica listens for its peers (default: its --peers entry; "
     "port 0 picks a free one, written to the endpoints file as 'peer ...')", cxxopts::value<std::string>())
    ("peer-workers", "Replicated mode: every replica's worker endpoint as ID=ENDPOINT,...; followers name the "
     "leader's to workers so they go straight to it", cxxopts::value<std::string>())
    ("join", "Replicated mode: start as a new replica outside the cluster's configuration and wait to be added "
     "(gpool admin replica add). --peers lists the running replicas and this one")
    ("election-timeout-ms", "Replicated mode: a follower that hears no leader for a random 1-2x this long "
     "starts an election",
     cxxopts::value<int>()->default_value(std::to_string(defaults.replicas.election_ticks)))
    ("raft-heartbeat-ms", "Replicated mode: how often the leader heartbeats its followers (less than "
     "--election-timeout-ms)",
     cxxopts::value<int>()->default_value(std::to_string(defaults.replicas.heartbeat_ticks)))
    ("strategy", "Placement strategy: binpack, spread or fragmentation (overrides the config file's [nodeorder] strategy)",
     cxxopts::value<std::string>())
    ("scheduler-config", "Scheduler config file (actions and plugin settings); re-read on SIGHUP",
     cxxopts::value<std::string>()->default_value(""))
    ("print-scheduler-config", "Print the scheduler config in effect (defaults, the file, --strategy) and exit")
    ("heartbeat-ms", "Heartbeat interval workers are told to use",
     cxxopts::value<uint32_t>()->default_value(std::to_string(defaults.heartbeat_interval_ms)))
    ("node-timeout-ms", "Silence after which a node is marked NotReady",
     cxxopts::value<int64_t>()->default_value(std::to_string(defaults.node_timeout_ms)))
    ("node-lost-ms", "Silence after which a node is Lost: its tasks are lost and requeued by their restart policy "
                     "(at least --node-lease-ms + 5000)",
     cxxopts::value<int64_t>()->default_value(std::to_string(defaults.node_lost_ms)))
    ("node-lease-ms", "How long a worker's tasks keep running without an acknowledged heartbeat; past it the node "
                      "kills them itself",
     cxxopts::value<uint32_t>()->default_value(std::to_string(defaults.node_lease_ms)))
    ("preempt-grace-ms", "Time between SIGTERM and SIGKILL when stopping tasks",
     cxxopts::value<uint32_t>()->default_value(std::to_string(defaults.preempt_grace_ms)))
    ("snapshot-every", "Log entries between state snapshots, at least",
     cxxopts::value<uint64_t>()->default_value(std::to_string(defaults.snapshot_every)))
    ("snapshot-log-ratio", "A snapshot also waits until the log since the last one is this many times that "
                           "snapshot's size, so its cost is spread over the log it replaces (0: count only; at most 100)",
     cxxopts::value<double>()->default_value("1"))
    ("snapshot-on-loop", "Encode snapshots and exports on the coordinator's loop thread instead of in a forked "
                         "child (stalls the loop for the encoding; for hosts that refuse fork)")
    ("max-frame-bytes", "Largest accepted message in bytes",
     cxxopts::value<size_t>()->default_value(std::to_string(defaults.max_frame_bytes)))
    ("max-spec-bytes", "Largest accepted job spec in bytes (msgpack-encoded); larger ones are ResourceExhausted",
     cxxopts::value<uint64_t>()->default_value(std::to_string(defaults.max_spec_bytes)))
    ("max-watches-per-user", "Watches one caller (user or job key) may hold over all its connections; more are "
     "ResourceExhausted. Admins are not held to it",
     cxxopts::value<size_t>()->default_value(std::to_string(defaults.max_watches_per_user)))
    ("max-sessions-per-user", "rGPU sessions one user may have open at once; one more is ResourceExhausted at "
     "submit. Admins are not held to it",
     cxxopts::value<uint32_t>()->default_value(std::to_string(defaults.max_sessions_per_user)))
    ("max-connections-per-key", "Client connections one key may hold (counted from a connection's first "
     "message, with CurveZMQ); a message on one more is ResourceExhausted. Admins are not held to it",
     cxxopts::value<uint32_t>()->default_value(std::to_string(defaults.max_connections_per_key)))
    ("max-inflight-per-key", "Requests one key may have sent and not yet had answered; one more is "
     "ResourceExhausted at once. Admins are not held to it",
     cxxopts::value<uint32_t>()->default_value(std::to_string(defaults.max_inflight_per_key)))
    ("max-exec-streams-per-user", "`gpool exec` commands one user (or one job's own launcher) may have open at "
     "once; one more is ResourceExhausted. Admins are not held to it",
     cxxopts::value<uint32_t>()->default_value(std::to_string(defaults.max_exec_streams_per_user)))
    ("max-watches", "Watches the coordinator holds in all",
     cxxopts::value<size_t>()->default_value(std::to_string(defaults.max_watches)))
    ("watch-admin-reserve", "Of --max-watches, the slots only admins may take, so other users can never leave "
     "admins without watches",
     cxxopts::value<size_t>()->default_value(std::to_string(defaults.watch_admin_reserve)))
    ("max-grace-period-ms", "Longest grace_period a job may ask for (SIGTERM to SIGKILL when its tasks are "
     "stopped); longer ones are refused at submit",
     cxxopts::value<uint32_t>()->default_value(std::to_string(defaults.max_grace_period_ms)))
    ("uid-range", "FIRST-LAST: users created without --uid get the lowest free uid of this range (each user its "
     "own; their tasks run as it on the workers)", cxxopts::value<std::string>()->default_value("200000-299999"))
    ("retain-finished-ms", "How long a finished job stays in the coordinator's state after it finished; then it "
     "is forgotten (gpool job N: NotFound, compacted) and only its usage summary stays",
     cxxopts::value<int64_t>()->default_value(std::to_string(defaults.retention.keep_ms)))
    ("retain-finished-jobs", "At most this many finished jobs are kept (the newest); older ones are forgotten",
     cxxopts::value<uint64_t>()->default_value(std::to_string(defaults.retention.keep_jobs)))
    ("retention-check-ms", "How often the leader looks for finished jobs past --retain-finished-ms or "
     "--retain-finished-jobs", cxxopts::value<int64_t>()->default_value(std::to_string(defaults.retention.check_every_ms)))
    ("usage-checkpoint-ms", "How often the leader checkpoints running tasks' usage (a task lost with its node "
     "is charged up to the last checkpoint); 0: never",
     cxxopts::value<int64_t>()->default_value(std::to_string(defaults.usage.checkpoint_every_ms)))
    ("usage-keep-records", "Usage records kept at most (the newest; rollups keep the sums); 0: no limit",
     cxxopts::value<uint64_t>()->default_value(std::to_string(defaults.usage.keep_records)))
    ("usage-keep-days", "Days usage records are kept after they ended",
     cxxopts::value<int64_t>()->default_value(std::to_string(defaults.usage.keep_records_ms / 86'400'000)))
    ("usage-hourly-days", "Days hourly usage rollups are kept (reports exact to the hour); older reports read whole days",
     cxxopts::value<int64_t>()->default_value(std::to_string(defaults.usage.keep_hourly_ms / 86'400'000)))
    ("usage-daily-days", "Days daily usage rollups are kept; 0: forever",
     cxxopts::value<int64_t>()->default_value(std::to_string(defaults.usage.keep_daily_ms / 86'400'000)))
    ("disk-reserve-bytes", "At or below this much free space on the data dir's file system the coordinator "
     "refuses writes (Unavailable: disk full), keeps serving reads and status, and resumes by itself once space "
     "returns", cxxopts::value<uint64_t>()->default_value(std::to_string(defaults.disk_reserve_bytes)))
    ("disk-retry-ms", "How often a full data dir is looked at again",
     cxxopts::value<int64_t>()->default_value(std::to_string(defaults.disk_retry_ms)))
    ("token-file", "File holding the shared token clients, workers and the other replicas must send "
     "(surrounding whitespace ignored)",
     cxxopts::value<std::string>())
    ("key-file", "CurveZMQ: this replica's secret key file (gpool admin keygen; mode 0600). Every port then "
     "encrypts and authenticates: clients by user key, workers by node key, replicas by --peer-keys. One of "
     "--key-file or --insecure is required", cxxopts::value<std::string>())
    ("insecure", "Plaintext: no encryption, no authentication but --token-file. For a trusted single-user "
     "machine only; logs a warning at start-up")
    ("admin-key", "CurveZMQ: public key file of the bootstrap admin, admitted on the client port as user "
     "'admin'", cxxopts::value<std::string>())
    ("worker-enrolment", "CurveZMQ: admission (an unknown worker key's node waits as a pending enrolment, with "
     "no work, until an admin approves it or it presents a join token), admin (only keys bound before are "
     "admitted) or first-use (LAB ONLY: any key that reaches the worker port becomes a node)",
     cxxopts::value<std::string>()->default_value("admission"))
    ("peer-keys", "CurveZMQ, replicated mode: every replica's public key file as ID=FILE,... (this one's "
     "included)", cxxopts::value<std::string>())
    ("alert-queue-wait-ms", "Alert when a job has been pending this long (0: off)",
     cxxopts::value<int64_t>()->default_value("1800000"))
    ("alert-quota-pct", "Alert when a queue holds this percentage of its capability of a resource (0: off)",
     cxxopts::value<uint32_t>()->default_value("90"))
    ("alert-low-util-pct", "Alert when a running task's GPUs are all below this utilisation (NVML nodes; 0: off)...",
     cxxopts::value<uint32_t>()->default_value("10"))
    ("alert-low-util-ms", "...for this long", cxxopts::value<int64_t>()->default_value("1800000"))
    ("scale-check-ms", "How often the leader evaluates elastic jobs' scale rules",
     cxxopts::value<int64_t>()->default_value("5000"))
    ("alert-check-ms", "How often the leader evaluates the alert rules",
     cxxopts::value<int64_t>()->default_value("5000"))
    ("http-address", "HOST:PORT of the HTTP port: Prometheus /metrics, the JSON API (/api/v1/...) and the "
     "dashboard (/). Port 0 takes an ephemeral port (written to the endpoints file as 'http'); 'none' (the "
     "default) turns HTTP off: a port that is on serves TLS or says --http-insecure (issue 48), and a default "
     "can do neither. Production: a fixed port, e.g. 0.0.0.0:7480",
     cxxopts::value<std::string>()->default_value("none"))
    ("http-cert", "PEM certificate (chain) of the HTTP port: it serves HTTPS. Required, with --http-key, on "
     "every --http-address unless --http-insecure", cxxopts::value<std::string>()->default_value(""), "FILE")
    ("http-key", "PEM private key of --http-cert", cxxopts::value<std::string>()->default_value(""), "FILE")
    ("http-client-ca", "PEM CA certificates: HTTPS clients must present a certificate one of them signed",
     cxxopts::value<std::string>()->default_value(""), "FILE")
    ("http-insecure", "Serve plain HTTP on --http-address, loopback included: API tokens and session cookies "
     "travel in the clear (only behind a TLS-terminating proxy on the same host or network you trust; warned at "
     "start)")
    ("metrics-per-gpu", "Per-GPU series on /metrics (one per GPU and figure); false keeps only per-model totals",
     cxxopts::value<bool>()->default_value("true"))
    ("log-level", "trace, debug, info, warn or error", cxxopts::value<std::string>()->default_value("info"))
    ("restore-snapshot", "Write a new data dir (--data-dir, which must be empty) from a snapshot file saved by "
     "'gpool admin snapshot save', then exit. With --peers, a replica's data dir of a cluster of those replica "
     "ids (restore every replica from the same file with the same --peers); without, a single replica's",
     cxxopts::value<std::string>())
    ("snapshot-verify-key", "With --restore-snapshot: the public key (PREFIX.pub of 'gpool admin snapshot keygen "
     "--out PREFIX') the file must be signed with; an unsigned file, one signed by another key or one changed "
     "since it was signed is refused and nothing is written", cxxopts::value<std::string>(), "FILE")
    ("version", "Print the version and exit")
    ("h,help", "Print this help");
  // clang-format on

  gpool::control::CoordinatorOptions options;
  std::string log_level = "info";
  std::string token_file;
  std::string key_file;
  std::string admin_key_file;
  std::map<uint64_t, std::string> peer_key_files;
  bool insecure = false;
  try {
    auto args = cli.parse(argc, argv);
    if (args.count("help")) {
      std::cout << cli.help() << "\n";
      return 0;
    }
    if (args.count("version")) {
      std::cout << "gpool-coordinator 0.1.0\n";
      return 0;
    }
    if (!args.unmatched().empty()) throw cxxopts::exceptions::exception("unexpected argument '" + args.unmatched()[0] + "'");
    if (args.count("restore-snapshot")) return RestoreSnapshot(args);
    if (args.count("snapshot-verify-key")) {
      throw cxxopts::exceptions::exception("--snapshot-verify-key only applies with --restore-snapshot");
    }
    log_level = args["log-level"].as<std::string>();
    if (log_level != "trace" && log_level != "debug" && log_level != "info" && log_level != "warn" &&
        log_level != "error") {
      throw cxxopts::exceptions::exception("unknown --log-level '" + log_level +
                                           "' (trace, debug, info, warn or error)");
    }
    options.data_dir = args["data-dir"].as<std::string>();
    options.client_endpoint = args["client-addr"].as<std::string>();
    options.worker_endpoint = args["worker-addr"].as<std::string>();
    // Refused here with the reason, instead of by ZeroMQ's bind at startup
    // (the defaults are fine).
    for (const char* flag : {"client-addr", "worker-addr", "peer-addr"}) {
      if (!args.count(flag)) continue;
      const std::string endpoint = args[flag].as<std::string>();
      if (gpool::Status valid = gpool::ValidateEndpoint(endpoint, std::string("--") + flag); !valid.ok()) {
        throw cxxopts::exceptions::exception(valid.message());
      }
    }
    options.replica_id = args["id"].as<std::string>();
    options.alerts.queue_wait_ms = args["alert-queue-wait-ms"].as<int64_t>();
    options.alerts.quota_used_pct = args["alert-quota-pct"].as<uint32_t>();
    options.alerts.low_util_pct = args["alert-low-util-pct"].as<uint32_t>();
    options.alerts.low_util_ms = args["alert-low-util-ms"].as<int64_t>();
    options.alerts.check_every_ms = args["alert-check-ms"].as<int64_t>();
    options.scaling.check_every_ms = args["scale-check-ms"].as<int64_t>();
    if (options.scaling.check_every_ms < 100) throw cxxopts::exceptions::exception("--scale-check-ms: at least 100");
    if (options.alerts.queue_wait_ms < 0 || options.alerts.low_util_ms < 0 || options.alerts.check_every_ms < 100 ||
        options.alerts.quota_used_pct > 1000 || options.alerts.low_util_pct > 100) {
      throw cxxopts::exceptions::exception("alert thresholds: times >= 0, --alert-check-ms >= 100, "
                                           "--alert-low-util-pct <= 100");
    }
    options.http_address = args["http-address"].as<std::string>();
    if (options.http_address == "none") options.http_address.clear();
    options.http_cert = args["http-cert"].as<std::string>();
    options.http_key = args["http-key"].as<std::string>();
    options.http_client_ca = args["http-client-ca"].as<std::string>();
    options.http_insecure = args.count("http-insecure") > 0;
    if (gpool::Status tls = gpool::control::CheckHttpFlags(options); !tls.ok()) {
      throw cxxopts::exceptions::exception(tls.message());
    }
    options.metrics_per_gpu = args["metrics-per-gpu"].as<bool>();
    options.version = "0.1.0";
    options.scheduler_config_path = args["scheduler-config"].as<std::string>();
    if (!options.scheduler_config_path.empty()) {
      auto config = gpool::scheduler::LoadSchedulerConfig(options.scheduler_config_path);
      if (!config.ok()) throw cxxopts::exceptions::exception(config.status().message());
      options.scheduler_config = *config;
      // The [health] sections of the same file (absent: the defaults).
      auto health = gpool::health::LoadHealthPolicyConfig(options.scheduler_config_path);
      if (!health.ok() && health.status().code() != gpool::StatusCode::kNotFound) {
        throw cxxopts::exceptions::exception(health.status().message());
      }
      if (health.ok()) options.health_config = *health;
    }
    if (args.count("strategy")) {
      auto strategy = gpool::scheduler::StrategyFromName(args["strategy"].as<std::string>());
      if (!strategy.ok()) throw cxxopts::exceptions::exception(strategy.status().message());
      options.scheduler_config.node_order.strategy = *strategy;
    }
    if (args.count("print-scheduler-config")) {
      std::cout << gpool::scheduler::RenderSchedulerConfig(options.scheduler_config)
                << gpool::health::RenderHealthPolicyConfig(options.health_config);
      return 0;
    }
    options.reload_scheduler_config = &g_reload_scheduler;
    options.heartbeat_interval_ms = args["heartbeat-ms"].as<uint32_t>();
    options.node_timeout_ms = args["node-timeout-ms"].as<int64_t>();
    options.node_lost_ms = args["node-lost-ms"].as<int64_t>();
    options.node_lease_ms = args["node-lease-ms"].as<uint32_t>();
    options.preempt_grace_ms = args["preempt-grace-ms"].as<uint32_t>();
    options.snapshot_every = args["snapshot-every"].as<uint64_t>();
    options.snapshot_log_ratio = args["snapshot-log-ratio"].as<double>();
    options.snapshot_on_loop = args["snapshot-on-loop"].as<bool>();
    if (!(options.snapshot_log_ratio >= 0 && options.snapshot_log_ratio <= 100)) {
      throw cxxopts::exceptions::exception("--snapshot-log-ratio must be between 0 and 100");
    }
    options.max_frame_bytes = args["max-frame-bytes"].as<size_t>();
    options.max_spec_bytes = args["max-spec-bytes"].as<uint64_t>();
    options.max_grace_period_ms = args["max-grace-period-ms"].as<uint32_t>();
    auto uid_range = gpool::control::ParseUidRange(args["uid-range"].as<std::string>());
    if (!uid_range.ok()) throw cxxopts::exceptions::exception(uid_range.status().message());
    std::tie(options.uid_first, options.uid_last) = *uid_range;
    options.max_watches_per_user = args["max-watches-per-user"].as<size_t>();
    options.max_watches = args["max-watches"].as<size_t>();
    options.max_sessions_per_user = args["max-sessions-per-user"].as<uint32_t>();
    options.watch_admin_reserve = args["watch-admin-reserve"].as<size_t>();
    options.max_connections_per_key = args["max-connections-per-key"].as<uint32_t>();
    options.max_inflight_per_key = args["max-inflight-per-key"].as<uint32_t>();
    options.max_exec_streams_per_user = args["max-exec-streams-per-user"].as<uint32_t>();
    if (options.max_connections_per_key == 0 || options.max_inflight_per_key == 0 ||
        options.max_exec_streams_per_user == 0) {
      throw cxxopts::exceptions::exception(
          "--max-connections-per-key, --max-inflight-per-key and --max-exec-streams-per-user must be positive");
    }
    if (options.max_watches_per_user == 0 || options.watch_admin_reserve >= options.max_watches ||
        options.max_sessions_per_user == 0) {
      throw cxxopts::exceptions::exception(
          "--max-watches-per-user and --max-sessions-per-user must be positive and --watch-admin-reserve below "
          "--max-watches");
    }
    options.retention.keep_ms = args["retain-finished-ms"].as<int64_t>();
    options.retention.keep_jobs = args["retain-finished-jobs"].as<uint64_t>();
    options.retention.check_every_ms = args["retention-check-ms"].as<int64_t>();
    options.usage.checkpoint_every_ms = args["usage-checkpoint-ms"].as<int64_t>();
    options.usage.keep_records = args["usage-keep-records"].as<uint64_t>();
    options.usage.keep_records_ms = args["usage-keep-days"].as<int64_t>() * 86'400'000;
    options.usage.keep_hourly_ms = args["usage-hourly-days"].as<int64_t>() * 86'400'000;
    options.usage.keep_daily_ms = args["usage-daily-days"].as<int64_t>() * 86'400'000;
    if (options.usage.checkpoint_every_ms < 0 || options.usage.keep_records_ms <= 0) {
      throw cxxopts::exceptions::exception("--usage-checkpoint-ms must be >= 0, --usage-keep-days positive");
    }
    if (options.usage.keep_hourly_ms <= 0 || options.usage.keep_daily_ms < 0 ||
        (options.usage.keep_daily_ms > 0 && options.usage.keep_daily_ms < options.usage.keep_hourly_ms)) {
      throw cxxopts::exceptions::exception(
          "--usage-hourly-days must be positive and --usage-daily-days 0 (forever) or at least --usage-hourly-days");
    }
    if (options.retention.keep_ms < 0 || options.retention.check_every_ms <= 0) {
      throw cxxopts::exceptions::exception("--retain-finished-ms must be >= 0, --retention-check-ms positive");
    }
    options.disk_reserve_bytes = args["disk-reserve-bytes"].as<uint64_t>();
    options.disk_retry_ms = args["disk-retry-ms"].as<int64_t>();
    if (options.disk_retry_ms <= 0) throw cxxopts::exceptions::exception("--disk-retry-ms must be positive");
    if (options.heartbeat_interval_ms == 0 || options.node_timeout_ms <= 0 || options.snapshot_every == 0 ||
        options.max_frame_bytes < 1024) {
      throw cxxopts::exceptions::exception(
          "--heartbeat-ms, --node-timeout-ms and --snapshot-every must be positive, --max-frame-bytes >= 1024");
    }
    if (auto times = gpool::control::CheckNodeLossTimes(options.node_timeout_ms, options.node_lost_ms,
                                                        options.node_lease_ms);
        !times.ok()) {
      throw cxxopts::exceptions::exception(times.message());
    }
    if (args.count("token-file")) token_file = args["token-file"].as<std::string>();
    // Secure unless told otherwise, and never by accident: a coordinator
    // with neither flag refuses to start rather than choose for the operator.
    insecure = args.count("insecure") > 0;
    if (args.count("key-file")) key_file = args["key-file"].as<std::string>();
    if (insecure == !key_file.empty()) {
      throw cxxopts::exceptions::exception(
          insecure ? "--key-file and --insecure exclude each other"
                   : "no --key-file: generate a key pair with 'gpool admin keygen --out /etc/gpool/coordinator' and "
                     "pass --key-file /etc/gpool/coordinator.key, or run plaintext with --insecure");
    }
    if (args.count("admin-key")) admin_key_file = args["admin-key"].as<std::string>();
    auto enrolment = gpool::control::WorkerEnrolmentFromName(args["worker-enrolment"].as<std::string>());
    if (!enrolment.ok()) throw cxxopts::exceptions::exception(enrolment.status().message());
    options.worker_enrolment = *enrolment;
    if (*enrolment == gpool::control::WorkerEnrolment::kFirstUse) {
      spdlog::warn("worker_enrolment=first-use is for labs only: any process that reaches the worker port with a "
                   "fresh key registers as a node and is given work (and its jobs' environment); use admission");
    }
    if (insecure && (args.count("admin-key") || args.count("peer-keys") || args.count("worker-enrolment"))) {
      throw cxxopts::exceptions::exception("--admin-key, --peer-keys and --worker-enrolment need --key-file");
    }
    if (args.count("peer-keys")) {
      auto keys = ParsePeerKeyFiles(args["peer-keys"].as<std::string>());
      if (!keys.ok()) throw cxxopts::exceptions::exception(keys.status().message());
      peer_key_files = std::move(keys).value();
    }
    if (args.count("peers")) {
      auto peers = gpool::replication::ParsePeerList(args["peers"].as<std::string>(), "--peers");
      if (!peers.ok()) throw cxxopts::exceptions::exception(peers.status().message());
      options.replicas.peers = std::move(peers).value();
      auto id = gpool::ParseReplicaId(options.replica_id);
      if (!id.ok()) throw cxxopts::exceptions::exception("--id: with --peers, " + id.status().message());
      if (!options.replicas.peers.count(*id)) {
        throw cxxopts::exceptions::exception("--id " + std::to_string(*id) + " is not one of the --peers");
      }
      options.replicas.id = *id;
      if (args.count("peer-clients")) {
        auto clients = gpool::replication::ParsePeerList(args["peer-clients"].as<std::string>(), "--peer-clients");
        if (!clients.ok()) throw cxxopts::exceptions::exception(clients.status().message());
        options.replicas.peer_clients = std::move(clients).value();
      }
      if (args.count("peer-workers")) {
        auto workers = gpool::replication::ParsePeerList(args["peer-workers"].as<std::string>(), "--peer-workers");
        if (!workers.ok()) throw cxxopts::exceptions::exception(workers.status().message());
        options.replicas.peer_workers = std::move(workers).value();
      }
      if (args.count("peer-addr")) options.replicas.listen_endpoint = args["peer-addr"].as<std::string>();
      options.replicas.join = args.count("join") > 0;
      // Raft ticks are milliseconds, so both flags are tick counts.
      options.replicas.election_ticks = args["election-timeout-ms"].as<int>();
      options.replicas.heartbeat_ticks = args["raft-heartbeat-ms"].as<int>();
      if (options.replicas.heartbeat_ticks <= 0 || options.replicas.election_ticks <= options.replicas.heartbeat_ticks) {
        throw cxxopts::exceptions::exception(
            "--raft-heartbeat-ms must be positive and less than --election-timeout-ms");
      }
    } else if (args.count("peer-clients") || args.count("peer-workers") || args.count("peer-addr") ||
               args.count("join")) {
      throw cxxopts::exceptions::exception("--peer-clients, --peer-workers, --peer-addr and --join need --peers");
    }
  } catch (const std::exception& e) {
    std::cerr << "gpool-coordinator: " << e.what() << "\n(see --help)\n";
    return kExitUsage;
  }

  // Logs go to stderr, like the worker's, so stdout stays free for tooling.
  spdlog::set_default_logger(spdlog::stderr_color_mt("coordinator"));
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ coordinator %v");
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  struct sigaction hangup {};
  hangup.sa_handler = OnHangup;
  sigaction(SIGHUP, &hangup, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  RaiseDescriptorLimit();
  if (insecure) {
    spdlog::warn("INSECURE: --insecure: every port is plaintext and unauthenticated; anyone who can reach "
                 "them can read all traffic, submit as any user, cancel any job and pose as any node. Use "
                 "--key-file outside a trusted single-user machine");
  } else {
    // A key that cannot be used as it is will not fix itself: exit 3.
    auto keys = gpool::security::ReadSecretKeyFile(key_file);
    if (!keys.ok()) {
      spdlog::critical("cannot start flag=--key-file error=\"{}\"", keys.status().ToString());
      return kExitPermanent;
    }
    options.curve_keys = *keys;
    if (!admin_key_file.empty()) {
      auto admin = gpool::security::ReadPublicKeyFile(admin_key_file);
      if (!admin.ok()) {
        spdlog::critical("cannot start flag=--admin-key error=\"{}\"", admin.status().ToString());
        return kExitPermanent;
      }
      options.admin_key = *admin;
    }
    for (const auto& [id, path] : peer_key_files) {
      auto key = gpool::security::ReadPublicKeyFile(path);
      if (!key.ok()) {
        spdlog::critical("cannot start flag=--peer-keys replica={} error=\"{}\"", id, key.status().ToString());
        return kExitPermanent;
      }
      options.replicas.peer_keys[id] = *key;
    }
    if (!options.replicas.peers.empty()) {
      for (const auto& [id, endpoint] : options.replicas.peers) {
        if (options.replicas.peer_keys.count(id)) continue;
        spdlog::critical("cannot start flag=--peer-keys error=\"replica {} at {} has no public key; a CurveZMQ "
                         "cluster needs every replica's (--peer-keys ID=FILE,...)\"", id, endpoint);
        return kExitPermanent;
      }
      if (options.replicas.peer_keys.at(options.replicas.id) != options.curve_keys.public_key) {
        spdlog::critical("cannot start error=\"--peer-keys names another public key for this replica ({}) than "
                         "its --key-file holds\"", options.replicas.id);
        return kExitPermanent;
      }
    }
  }
  if (!token_file.empty()) {
    auto token = gpool::ReadTokenFile(token_file);
    if (!token.ok()) {
      spdlog::critical("cannot start error=\"{}\"", token.status().ToString());
      return kExitPermanent;
    }
    options.token = *token;
  }
  auto coordinator = gpool::control::Coordinator::Open(options);
  if (!coordinator.ok()) {
    // A port in use may free itself; a locked, damaged or foreign data dir or
    // a removed replica will not, and a restart loop would only hide it. A
    // full disk is not a failure here: Open comes up in full-disk mode.
    const bool transient = coordinator.status().code() == gpool::StatusCode::kUnavailable;
    const int code = gpool::replication::IsRemovedReplica(coordinator.status()) ? kExitRemoved
                     : transient                                                 ? kExitFailure
                                                                                 : kExitPermanent;
    spdlog::critical("cannot start exit_code={} error=\"{}\"", code, coordinator.status().ToString());
    return code;
  }
  gpool::Status status = (*coordinator)->Run(g_stop);
  if (!status.ok()) {
    spdlog::critical("stopped on error exit_code={} error=\"{}\"", kExitFailure, status.ToString());
    return kExitFailure;
  }
  if ((*coordinator)->removed()) {
    spdlog::info("exiting: this replica is no longer a member of the cluster exit_code={}", kExitRemoved);
    return kExitRemoved;
  }
  return 0;
}
