// Coordinator: the composition root of gpool-coordinator.
//
// Owns the storage, the commit log, the proposal tracker, the state machine,
// the worker table and the managers (Gateway, NodeRegistry, Dispatcher,
// WorkerRelay, SchedulerDriver), and runs them on one event-loop thread over two
// ZeroMQ ROUTER sockets. Managers reach the outside only through ports
// (Outbox, Proposer) and hear of each other only through events
// (WorkerEvents) wired in Open, so each is tested alone on fakes and can
// later move onto its own thread without changing its logic.
//
// The loop: poll sockets -> hand frames to components -> tick timers ->
// group-commit every proposal of this turn with one fsync -> apply committed
// entries in order -> run the callbacks that reply to clients and workers.
// The poll also watches an eventfd that the scheduling thread signals when a
// background cycle has its plan, so the plan is proposed at once rather than
// at the next timeout.
//
// Open() recovers the full state from the data dir (snapshot + log replay).
//
// A full data dir is a mode, not a crash (disk_full_mode.h): writes are
// refused with a typed error, reads and status are served, and writes resume
// by themselves once space returns; a coordinator started on a full disk
// comes up in that mode from a read-only copy of its store.
//
// Replication: with no peers the log is a LocalLog (one replica, commit =
// fsync). With peers it is a RaftLog over a PeerTransport, pumped on the same
// loop; the coordinator sees either only as a CommitLog; only the serving leader (leader, caught up with its term) schedules,
// dispatches, watches node liveness and answers clients and workers, and every
// other replica redirects them (NotLeader). When leadership changes, proposals
// that can no longer commit as proposed are failed with NotLeader (clients
// retry with the same idempotency key), and the components' in-memory state is
// reset: a new leader re-sends every due bind and preempt and gives every node
// a fresh liveness window.
// Reads wait for a ReadIndex round (ReadBarrier), batched per loop turn, so
// they are linearizable. Replicas are added and removed one at a time
// (ChangeMembership, Raft single-server changes); a replica whose removal
// commits stops serving and Run() returns.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <zmq.hpp>

#include "control/alert_driver.h"
#include "control/scale_driver.h"
#include "control/apply_pipeline.h"
#include "control/config_reload.h"
#include "control/coordinator_options.h"
#include "control/disk_full_mode.h"
#include "control/dispatcher.h"
#include "control/exec_key_pool.h"
#include "control/gateway.h"
#include "control/health/policy_config.h"
#include "control/health_driver.h"
#include "control/http/coordinator_http.h"
#include "control/http/gateway_bridge.h"
#include "control/leader_service.h"
#include "control/client_monitor.h"
#include "control/log/commit_log.h"
#include "control/metrics/control_metrics.h"
#include "control/node_registry.h"
#include "control/proposal_tracker.h"
#include "control/replication/peer_transport.h"
#include "control/replication/replica_set.h"
#include "control/retention_driver.h"
#include "control/scheduler_driver.h"
#include "control/security/key_directory.h"
#include "control/security/key_sync.h"
#include "control/replica_key_sync.h"
#include "control/session_lease_driver.h"
#include "control/snapshot_schedule.h"
#include "control/snapshot_taker.h"
#include "control/usage_driver.h"
#include "control/watch/change_feed.h"
#include "control/watch/watch_hub.h"
#include "control/watch/watch_publisher.h"
#include "control/node_label_sync.h"
#include "control/snapshot_restore.h"
#include "control/worker_relay.h"
#include "protocol/base/clock.h"
#include "protocol/base/loop_inbox.h"
#include "protocol/security/keys.h"
#include "protocol/security/zap_handler.h"
#include "storage/leveldb_store.h"
#include "storage/log_store.h"

namespace gpool::control {

class Coordinator final : public Outbox {
 public:
  static Result<std::unique_ptr<Coordinator>> Open(const CoordinatorOptions& options);
  ~Coordinator() override;

  // Serves until `stop` becomes true.
  Status Run(const std::atomic<bool>& stop);

  const std::string& client_endpoint() const { return client_endpoint_; }
  const std::string& worker_endpoint() const { return worker_endpoint_; }
  // host:port of the HTTP port; empty without one.
  std::string http_address() const { return http_ ? http_->address() : std::string(); }
  const state::ClusterState& state() const { return state_; }
  // Who the ZAP handler admits; null on an --insecure coordinator. The
  // committed users reach it through SetUsers.
  KeyDirectory* keys() { return keys_.get(); }
  const security::ZapHandler* zap() const { return zap_.get(); }

  // Outbox
  void ToClient(const std::string& peer, std::string frame) override;
  void ToWorker(const std::string& peer, std::string frame) override;

  // True once this replica's own removal from the replica set has committed:
  // Run() then returns and the process exits.
  bool removed() const { return tracker_->removed(); }

 private:
  explicit Coordinator(const CoordinatorOptions& options);
  void WriteEndpoints();
  // Builds the managers and subscribes them to each other's events: the only
  // place that knows who talks to whom.
  void Wire();
  void Drain(zmq::socket_t& socket, bool from_clients);
  // Commits and applies (ApplyPipeline), then follows leadership and, as
  // leader, schedules and dispatches for what changed.
  Status CommitAndApply();
  // Resets the managers when the tracker says leadership changed.
  void FollowLeadership();
  // The HTTP port (coordinator_http_wiring.cc): started last in Open, on its
  // own threads, reaching the state only through inbox_.
  Status StartHttp();
  Result<HttpCaller> HttpAuthenticate(const std::string& bearer);
  Result<HttpCaller> HttpAuthenticateToken(const std::string& bearer);
  Result<HttpCaller> HttpCallerOf(const ApiTokenInfo& token);
  Status HttpMayReadCluster(const HttpCaller& caller) const;
  std::string RenderMetrics() const;

  CoordinatorOptions options_;
  std::unique_ptr<storage::LevelDbStore> kv_;
  std::unique_ptr<storage::LogStore> log_store_;
  std::unique_ptr<DiskFullMode> disk_;
  bool endpoints_written_ = false;
  state::ClusterState state_;
  int64_t removed_at_ms_ = -1;
  // A restored data dir's job-id floor (snapshot_restore.h); 0: none.
  uint64_t restore_job_id_floor_ = 0;
  // Staggered by replica id, so the replicas' snapshot children do not all
  // start at the same index (snapshot_schedule.h).
  SnapshotSchedule snapshots_{options_.snapshot_every, options_.snapshot_log_ratio,
                              options_.replicas.peers.size() > 1
                                  ? static_cast<double>(options_.replicas.id % 3) / 3.0
                                  : 0.0};

  zmq::context_t context_;
  // Declared after the context, before the sockets: destroyed after every
  // socket it authenticates, before the context terminates.
  std::unique_ptr<KeyDirectory> keys_;
  KeySync key_sync_{nullptr, false};  // keys_ in step with the state (set in Open)
  std::unique_ptr<ReplicaKeySync> replica_key_sync_;  // rotated replica keys -> keys_ and log_ (issue 48)
  std::unique_ptr<security::ZapHandler> zap_;
  zmq::socket_t clients_;
  zmq::socket_t workers_;
  // The client port's connections per key (secure mode only; issue 48).
  std::unique_ptr<ClientMonitor> client_monitor_;
  std::string client_endpoint_;
  std::string worker_endpoint_;
  // Declared after the context they use, so they close before it.
  std::unique_ptr<replication::PeerTransport> peers_;  // null for a single replica
  std::unique_ptr<log::CommitLog> log_;
  std::unique_ptr<ProposalTracker> tracker_;
  std::unique_ptr<ApplyPipeline> pipeline_;
  // The periodic snapshot and export images, encoded by a forked child.
  std::unique_ptr<SnapshotTaker> snapshot_taker_;

  // Written by the scheduling thread when a background cycle has its plan,
  // so the loop wakes for it instead of at its next timeout.
  int wake_fd_ = -1;

  WorkerTable connections_;
  RequestIds request_ids_;
  std::unique_ptr<NodeRegistry> registry_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<WorkerRelay> worker_relay_;
  // Its pushes go through worker_relay_, whose callbacks run only from Tick,
  // Reset and replies on this loop: never once the coordinator is destroyed.
  std::unique_ptr<NodeLabelSync> label_sync_;
  ExecKeyPool exec_keys_;  // before the gateway, which takes from it
  std::unique_ptr<Gateway> gateway_;
  std::unique_ptr<SchedulerDriver> scheduler_;
  std::unique_ptr<HealthDriver> health_;
  std::unique_ptr<RetentionDriver> retention_;
  std::unique_ptr<UsageDriver> usage_;
  std::unique_ptr<SessionLeaseDriver> session_leases_;
  std::unique_ptr<AlertDriver> alerts_;
  std::unique_ptr<ScaleDriver> scaling_;
  // The leader-only drivers above (and the watch hub), ticked in this order: leader_service.h.
  std::vector<LeaderService*> leader_services_;
  // What each applied command changed (every replica), and the leader's
  // watches fed from it (docs/protocol.md 7.19).
  ChangeFeed feed_;
  std::unique_ptr<WatchHub> watches_;
  std::unique_ptr<WatchPublisher> watch_publisher_;

  // What /metrics reports beyond the state; its parts are lent to the
  // components in Wire (declared before them would also do: they only hold
  // pointers, and nothing records during destruction).
  std::unique_ptr<ControlMetrics> metrics_;
  std::unique_ptr<LoopInbox> inbox_;
  std::unique_ptr<GatewayBridge> bridge_;
  // Last: destroyed first, so no HTTP thread is left waiting on the loop.
  std::unique_ptr<CoordinatorHttp> http_;
  // When each API token was last used here (wall ms): this replica's own
  // view, never replicated (a log entry per HTTP request would be the cost).
  std::map<std::string, int64_t> token_last_used_;
};

}  // namespace gpool::control
