#include "control/coordinator.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "control/frame_intake.h"
#include "control/frames.h"
#include "control/client_monitor.h"
#include "control/private_data_dir.h"
#include "control/security/curve_ports.h"
#include "control/stop_handover.h"

namespace gpool::control {
namespace {

constexpr int64_t kRemovedDrainMs = 1000;

// The loop's stall meter reads the steady clock directly, not options_.clock:
// a test's fake clock stands still, and a turn's work is real time.
int64_t LoopClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Coordinator::Coordinator(const CoordinatorOptions& options)
    : options_(options), context_(1), clients_(context_, zmq::socket_type::router),
      workers_(context_, zmq::socket_type::router), wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

Coordinator::~Coordinator() {
  // HTTP first: its threads wait on the loop, which runs no more.
  if (inbox_) inbox_->Close();
  http_.reset();
  scheduler_.reset();  // joins a running background cycle, which may still signal wake_fd_
  clients_.close();
  workers_.close();
  if (wake_fd_ >= 0) close(wake_fd_);
}

Result<std::unique_ptr<Coordinator>> Coordinator::Open(const CoordinatorOptions& options) {
  std::unique_ptr<Coordinator> c(new Coordinator(options));
  GPOOL_RETURN_IF_ERROR(PreparePrivateDataDir(options.data_dir));  // issue 48: refused if others can read it

  storage::LevelDbOptions db_options;
  db_options.path = (std::filesystem::path(options.data_dir) / "db").string();
  // A disk too full for LevelDB's open serves a read-only copy (full-disk mode).
  db_options.read_only_fallback = true;
  GPOOL_ASSIGN_OR_RETURN(c->kv_, storage::LevelDbStore::Open(db_options));
  GPOOL_ASSIGN_OR_RETURN(c->log_store_, storage::LogStore::Open(c->kv_.get()));
  GPOOL_ASSIGN_OR_RETURN(c->restore_job_id_floor_, ReadRestoreJobIdFloor(*c->kv_));
  DiskGuardOptions disk_options;
  disk_options.path = options.data_dir;
  disk_options.reserve_bytes = options.disk_reserve_bytes;
  disk_options.retry_interval_ms = options.disk_retry_ms;
  disk_options.clock = options.clock;
  c->disk_ = std::make_unique<DiskFullMode>(disk_options, *c->kv_, *c->log_store_);
  if (c->kv_->read_only()) (void)c->disk_->WriteFailed(c->kv_->disk_error(), "opening the store");

  // Keys before any bind (curve_ports.h), the replicas' among them (in ReplicaSetOptionsOf).
  GPOOL_ASSIGN_OR_RETURN(CurveRouters curve, SecureRouters(c->context_, c->clients_, c->workers_, options.curve_keys,
                                                           options.worker_enrolment, options.admin_key));
  c->keys_ = std::move(curve.keys);
  c->zap_ = std::move(curve.zap);
  c->key_sync_ = KeySync(c->keys_.get(), !options.admin_key.empty());
  if (c->keys_) {
    // Before the bind, so no connection is accepted unseen.
    GPOOL_ASSIGN_OR_RETURN(c->client_monitor_,
                           ClientMonitor::Start(c->context_, c->clients_, options.max_connections_per_key));
  }
  GPOOL_ASSIGN_OR_RETURN(c->client_endpoint_,
                         BindRouter(c->clients_, options.client_endpoint, options.max_frame_bytes, "client"));
  GPOOL_ASSIGN_OR_RETURN(c->worker_endpoint_,
                         BindRouter(c->workers_, options.worker_endpoint, options.max_frame_bytes, "worker"));
  GPOOL_ASSIGN_OR_RETURN(replication::ReplicaSet set, replication::OpenReplicaSet(
                                                          ReplicaSetOptionsOf(options, c->keys_.get()),
                                                          c->log_store_.get(), c->context_));
  c->peers_ = std::move(set.transport);
  c->log_ = std::move(set.log);
  c->disk_->Attach(c->log_.get());
  GPOOL_RETURN_IF_ERROR(RecoverState(*c->log_, c->state_, c->snapshots_));

  c->Wire();
  c->pipeline_->Restored();  // the feed starts here; the key directory admits what the state says
  c->FollowLeadership();
  GPOOL_RETURN_IF_ERROR(c->StartHttp());
  // Once every port is bound, so a reader of the file sees all of them.
  c->WriteEndpoints();

  spdlog::info("coordinator ready replica={} security={} epoch={} client={} worker={} peer={} jobs={} nodes={} "
               "applied={}",
               options.replica_id, c->keys_ ? "curve" : "insecure", c->log_->term(), c->client_endpoint_, c->worker_endpoint_,
               c->peers_ ? c->peers_->listen_endpoint() : "-", c->state_.jobs().size(), c->state_.nodes().size(),
               c->state_.applied_index());
  return c;
}

void Coordinator::Wire() {
  ProposalTrackerOptions tracker_options;
  tracker_options.clock = options_.clock;
  tracker_options.disk = disk_.get();
  tracker_options.replica_keys_required = keys_ != nullptr;
  metrics_ = std::make_unique<ControlMetrics>(state_);
  tracker_options.metrics = &metrics_->replication;
  tracker_ = std::make_unique<ProposalTracker>(tracker_options, *log_);
  pipeline_ = std::make_unique<ApplyPipeline>(state_, snapshots_, *log_, *disk_, *tracker_, *options_.clock);
  // Issue 49: snapshots and exports are encoded by a forked child, off this loop.
  snapshot_taker_ = std::make_unique<SnapshotTaker>(
      snapshots_, *log_, *disk_, &metrics_->replication,
      options_.snapshot_on_loop ? nullptr : std::make_unique<SnapshotFork>(options_.data_dir));

  registry_ = std::make_unique<NodeRegistry>(RegistryOptionsOf(options_, keys_.get(), *metrics_), state_,
                                             connections_, *this, *tracker_, options_.clock->MonoMs());
  DispatcherOptions dispatcher_options = DispatcherOptionsOf(options_, *metrics_);
  dispatcher_options.coordinator_contacts = [this] {
    return CoordinatorContacts(client_endpoint_, log_->Report(), keys_.get(), options_.curve_keys.public_key);
  };
  dispatcher_ =
      std::make_unique<Dispatcher>(dispatcher_options, state_, connections_, request_ids_, *this, *tracker_);
  worker_relay_ = std::make_unique<WorkerRelay>(WorkerRelayOptions{}, connections_, request_ids_, *this, *tracker_);
  // The registry tells; the dispatcher and the relay listen. Neither calls it.
  registry_->Subscribe(dispatcher_.get());
  registry_->Subscribe(worker_relay_.get());
  label_sync_ = std::make_unique<NodeLabelSync>(state_, *worker_relay_);
  registry_->Subscribe(label_sync_.get());
  registry_->Subscribe(metrics_.get());

  GatewayOptions gateway_options = GatewayOptionsOf(options_, client_endpoint_);
  gateway_options.new_exec_pair = [this] { return exec_keys_.Take(); };
  gateway_options.token_last_used = [this](const std::string& id) {
    auto it = token_last_used_.find(id);
    return it == token_last_used_.end() ? int64_t{0} : it->second;
  };
  if (!options_.snapshot_on_loop) {
    gateway_options.request_snapshot_image = [this](uint64_t min_index, SnapshotTaker::ImageReady done) {
      snapshot_taker_->RequestImage(min_index, std::move(done));
    };
  }
  gateway_ = std::make_unique<Gateway>(gateway_options, state_, connections_, *worker_relay_, *this, *tracker_);
  watches_ = std::make_unique<WatchHub>(WatchHubOptions{.max_total = options_.max_watches,
                                                        .max_per_user = options_.max_watches_per_user,
                                                        .admin_reserve = options_.watch_admin_reserve},
                                        state_, feed_, *this, *tracker_);
  gateway_->set_watch_hub(watches_.get());
  watch_publisher_ = std::make_unique<WatchPublisher>(feed_, *watches_);
  // What follows the log beside the state, on every replica.
  pipeline_->Listen(&key_sync_);
  replica_key_sync_ = std::make_unique<ReplicaKeySync>(keys_.get(), log_.get());
  pipeline_->Listen(replica_key_sync_.get());
  pipeline_->Listen(watch_publisher_.get());

  scheduler_ = std::make_unique<SchedulerDriver>(SchedulerOptionsOf(options_, *metrics_, wake_fd_), state_, *tracker_);
  health_ = std::make_unique<HealthDriver>(options_.health_config, state_, connections_, *tracker_, options_.clock);
  retention_ = std::make_unique<RetentionDriver>(options_.retention, state_, *tracker_, options_.clock);
  usage_ = std::make_unique<UsageDriver>(options_.usage, state_, *tracker_, options_.clock);
  session_leases_ = std::make_unique<SessionLeaseDriver>(state_, *tracker_, options_.clock, options_.preempt_grace_ms);
  alerts_ = std::make_unique<AlertDriver>(options_.alerts, state_, connections_, *tracker_, options_.clock);
  scaling_ = std::make_unique<ScaleDriver>(options_.scaling, state_, connections_, *tracker_, options_.clock);
  leader_services_ = {health_.get(), retention_.get(), usage_.get(), session_leases_.get(), alerts_.get(),
                      scaling_.get(), watches_.get()};
}

Status Coordinator::CommitAndApply() {
  GPOOL_ASSIGN_OR_RETURN(const bool applied_any, pipeline_->SyncAndApply());
  FollowLeadership();
  if (applied_any && tracker_->leading()) {
    scheduler_->MarkDirty();
    dispatcher_->Tick(options_.clock->MonoMs());
  }
  return Status::Ok();
}

void Coordinator::FollowLeadership() {
  if (!tracker_->FollowLeadership()) return;
  // Connections, commands in flight and a plan in flight belong to one
  // leadership: a new leader re-sends every due bind and preempt once nodes
  // register, and gives every node a fresh liveness window.
  registry_->Reset(options_.clock->MonoMs());
  key_sync_.SyncAll(state_);  // bindings committed under another leader
  dispatcher_->Reset();
  worker_relay_->Reset(Status::Unavailable("the coordinator leader changed; retry"));
  scheduler_->Reset();
  snapshot_taker_->DropRequests(Status::Unavailable("the coordinator leader changed; start the export again"));
  for (LeaderService* service : leader_services_) service->Reset();
  // A restored cluster's first leader commits its job-id floor first.
  if (tracker_->leading()) ProposeRestoreJobIdFloor(restore_job_id_floor_, state_, *tracker_);
}

Status Coordinator::Run(const std::atomic<bool>& stop) {
  std::vector<zmq::pollitem_t> items = {{clients_.handle(), 0, ZMQ_POLLIN, 0}, {workers_.handle(), 0, ZMQ_POLLIN, 0}};
  const size_t wake_item = items.size();
  if (wake_fd_ >= 0) items.push_back({nullptr, wake_fd_, ZMQ_POLLIN, 0});
  const size_t inbox_item = items.size();
  if (inbox_) items.push_back({nullptr, inbox_->fd(), ZMQ_POLLIN, 0});
  if (peers_) items.push_back({peers_->inbound().handle(), 0, ZMQ_POLLIN, 0});
  // Connections closing must wake the loop too: their slots free then.
  if (client_monitor_) items.push_back({client_monitor_->events().handle(), 0, ZMQ_POLLIN, 0});
  int64_t last_dispatch = 0;
  // A leader asked to stop hands leadership over first and keeps serving
  // (redirecting) until the new leader is known, at most two election
  // timeouts: one for the transfer, which the core abandons after one, and
  // one for the new leader's first message to arrive.
  StopHandover handover(*log_, 2 * options_.replicas.election_ticks * options_.replicas.tick_ms);
  while (!stop.load() || handover.KeepRunning(options_.clock->MonoMs())) {
    try {
      // A replica paused by a full disk (below) has no Raft timers to keep.
      const bool paused = disk_->full() && !log_->IsLeader();
      // A full disk stops syncing, so a backlog left to apply (MsUntilDue 0) must not spin the loop.
      const int64_t due = disk_->full() ? std::max<int64_t>(1, log_->MsUntilDue()) : log_->MsUntilDue();
      const int64_t wait_ms = paused ? options_.schedule_interval_ms : std::min(options_.schedule_interval_ms, due);
      metrics_->loop.PollCalled(LoopClockNs());
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(wait_ms));
      metrics_->loop.PollReturned(LoopClockNs());
    } catch (const zmq::error_t& e) {
      // A signal (SIGTERM, SIGINT) interrupts the poll; the loop condition
      // then sees the stop flag.
      if (e.num() == EINTR) continue;
      return Status::Internal(std::string("polling sockets: ") + e.what());
    }
    if (wake_fd_ >= 0 && (items[wake_item].revents & ZMQ_POLLIN)) {
      uint64_t count = 0;
      (void)!read(wake_fd_, &count, sizeof(count));  // the scheduler's Tick below collects the cycle
    }
    // Peers first: a turn that also ticks should see what arrived before
    // deciding the leader went quiet. Leadership may then have moved: settle
    // it before serving this turn's frames.
    // A replica that cannot write does not take part in Raft once it has
    // stepped down (it would only pile up what it cannot persist); as leader
    // it listens until it hears of the leader the others elected.
    // Its peers' frames are dropped meanwhile (to Raft, lost messages), so
    // they neither pile up nor keep the poll awake.
    if (!disk_->full() || log_->IsLeader()) {
      log_->Pump();
    } else if (peers_) {
      (void)peers_->Drain();
    }
    LoopStallMeter& turn = metrics_->loop;  // phase marks: where a slow turn went
    turn.Phase("raft", LoopClockNs());
    pipeline_->BeginTurn();
    disk_->Tick();
    if (!endpoints_written_ && !disk_->full()) WriteEndpoints();
    GPOOL_RETURN_IF_ERROR(CommitAndApply());
    turn.Phase("apply", LoopClockNs());
    // The monitor's events first: a message's connection is known by then.
    if (client_monitor_) client_monitor_->Drain([&](const std::string& peer) { gateway_->PeerClosed(peer); });
    if (items[0].revents & ZMQ_POLLIN) Drain(clients_, /*from_clients=*/true);
    turn.Phase("clients", LoopClockNs());
    if (items[1].revents & ZMQ_POLLIN) Drain(workers_, /*from_clients=*/false);
    turn.Phase("workers", LoopClockNs());
    if (inbox_ && (items[inbox_item].revents & ZMQ_POLLIN)) {
      inbox_->RunPending();  // HTTP requests: metrics renders, JSON API requests
      GPOOL_RETURN_IF_ERROR(CommitAndApply());
      turn.Phase("http", LoopClockNs());
    }
    if (options_.reload_scheduler_config != nullptr && options_.reload_scheduler_config->exchange(false)) {
      ReloadSchedulerConfig(options_.scheduler_config_path, *scheduler_, *health_);
    }
    const int64_t now = options_.clock->MonoMs();
    const bool leading = tracker_->leading();
    if (leading) registry_->Tick(now);
    GPOOL_RETURN_IF_ERROR(CommitAndApply());
    turn.Phase("registry", LoopClockNs());
    if (leading && scheduler_->Tick(now)) GPOOL_RETURN_IF_ERROR(CommitAndApply());
    turn.Phase("scheduler", LoopClockNs());
    if (leading) {
      for (LeaderService* service : leader_services_) service->Tick(now);
      GPOOL_RETURN_IF_ERROR(CommitAndApply());
      turn.Phase("services", LoopClockNs());
    }
    if (leading && now - last_dispatch >= 200) {
      dispatcher_->Tick(now);
      last_dispatch = now;
      turn.Phase("dispatch", LoopClockNs());
    }
    worker_relay_->Tick(now);
    gateway_->Tick(now);
    tracker_->ExpireReads(now);
    turn.Phase("gateway", LoopClockNs());
    snapshot_taker_->Tick(state_, now);
    turn.Phase("snapshot", LoopClockNs());
    if (tracker_->removed()) {
      // Keep the loop turning a little longer so the replies already queued
      // (the removal's own among them) go out: closing a ROUTER with linger
      // was seen to drop them. Meanwhile this replica only redirects.
      if (removed_at_ms_ < 0) removed_at_ms_ = now;
      if (now - removed_at_ms_ >= kRemovedDrainMs) break;
    }
  }
  spdlog::info("coordinator stopping applied={}", state_.applied_index());
  return Status::Ok();
}

}  // namespace gpool::control
