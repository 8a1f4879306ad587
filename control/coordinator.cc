#include "control/coordinator.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>

#include <spdlog/spdlog.h>

#include "control/endpoints_file.h"
#include "control/frame_intake.h"
#include "control/frames.h"
#include "protocol/base/endpoint.h"
#include "protocol/security/curve_socket.h"

namespace gpool::control {
namespace {

constexpr int kMaxFramesPerDrain = 1000;
constexpr int64_t kRemovedDrainMs = 1000;

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
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) return Status::IoError("cannot create data dir " + options.data_dir + ": " + ec.message());

  storage::LevelDbOptions db_options;
  db_options.path = (std::filesystem::path(options.data_dir) / "db").string();
  // A disk too full for LevelDB's open serves a read-only copy (full-disk mode).
  db_options.read_only_fallback = true;
  GPOOL_ASSIGN_OR_RETURN(c->kv_, storage::LevelDbStore::Open(db_options));
  GPOOL_ASSIGN_OR_RETURN(c->log_store_, storage::LogStore::Open(c->kv_.get()));
  DiskGuardOptions disk_options;
  disk_options.path = options.data_dir;
  disk_options.reserve_bytes = options.disk_reserve_bytes;
  disk_options.retry_interval_ms = options.disk_retry_ms;
  disk_options.clock = options.clock;
  c->disk_ = std::make_unique<DiskFullMode>(disk_options, *c->kv_, *c->log_store_);
  if (c->kv_->read_only()) (void)c->disk_->WriteFailed(c->kv_->disk_error(), "opening the store");
  GPOOL_RETURN_IF_ERROR(c->Secure());
  GPOOL_RETURN_IF_ERROR(c->Bind());
  GPOOL_RETURN_IF_ERROR(c->OpenLog());
  c->disk_->Attach(c->log_.get());
  GPOOL_RETURN_IF_ERROR(c->Recover());
  c->key_sync_.SyncAll(c->state_);

  c->Wire();
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

  NodeRegistryOptions registry_options;
  registry_options.heartbeat_interval_ms = options_.heartbeat_interval_ms;
  registry_options.node_timeout_ms = options_.node_timeout_ms;
  registry_options.node_lost_ms = options_.node_lost_ms;
  registry_options.lease_ms = options_.node_lease_ms;
  registry_options.token = options_.token;
  registry_options.keys = keys_.get();
  registry_options.coordinator_id = options_.replica_id;
  registry_options.limits.max_frame_bytes = options_.max_frame_bytes;
  registry_options.clock = options_.clock;
  registry_options.metrics = &metrics_->workers;
  registry_ = std::make_unique<NodeRegistry>(registry_options, state_, connections_, *this, *tracker_,
                                             options_.clock->MonoMs());

  DispatcherOptions dispatcher_options;
  dispatcher_options.preempt_grace_ms = options_.preempt_grace_ms;
  dispatcher_options.metrics = &metrics_->workers;
  dispatcher_options.clock = options_.clock;
  // Tasks reach this replica first and every other one whose client address
  // (and, secured, key) is known, so their `gpool` follows a failover.
  dispatcher_options.coordinator_contacts = [this] {
    std::string endpoints = ReachableEndpoint(client_endpoint_);
    std::string keys = keys_ ? options_.curve_keys.public_key : std::string();
    const log::ReplicationReport report = log_->Report();
    for (const auto& replica : report.replicas) {
      if (replica.id == report.self_id || replica.client_address.empty()) continue;
      const std::optional<std::string> key = keys_ ? keys_->KeyOfReplica(replica.id) : std::optional<std::string>("");
      if (!key) continue;
      endpoints += "," + replica.client_address;
      if (keys_) keys += "," + *key;
    }
    return std::pair{std::move(endpoints), std::move(keys)};
  };
  dispatcher_ =
      std::make_unique<Dispatcher>(dispatcher_options, state_, connections_, request_ids_, *this, *tracker_);
  worker_relay_ = std::make_unique<WorkerRelay>(WorkerRelayOptions{}, connections_, request_ids_, *this, *tracker_);
  // The registry tells; the dispatcher and the relay listen. Neither calls it.
  registry_->Subscribe(dispatcher_.get());
  registry_->Subscribe(worker_relay_.get());
  registry_->Subscribe(metrics_.get());

  GatewayOptions gateway_options;
  gateway_options.token = options_.token;
  gateway_options.admin_key = options_.admin_key;
  gateway_options.replica_id = options_.replica_id;
  gateway_options.client_address = client_endpoint_;
  gateway_options.new_exec_pair = [this] { return exec_keys_.Take(); };
  gateway_options.limits.max_frame_bytes = options_.max_frame_bytes;
  gateway_options.max_spec_bytes = options_.max_spec_bytes;
  gateway_options.spec_limits.max_grace_period_ms = options_.max_grace_period_ms;
  gateway_ = std::make_unique<Gateway>(gateway_options, state_, connections_, *worker_relay_, *this, *tracker_);
  watches_ = std::make_unique<WatchHub>(WatchHubOptions{}, state_, feed_, *this, *tracker_);
  gateway_->set_watch_hub(watches_.get());

  SchedulerDriverOptions scheduler_options;
  scheduler_options.policy = options_.scheduler_config;
  scheduler_options.wall_clock = options_.clock;
  scheduler_options.background = true;
  scheduler_options.interval_ms = options_.schedule_interval_ms;
  scheduler_options.metrics = &metrics_->scheduling;
  if (wake_fd_ >= 0) {
    scheduler_options.on_cycle_done = [fd = wake_fd_] {
      const uint64_t one = 1;
      (void)!write(fd, &one, sizeof(one));
    };
  }
  scheduler_ = std::make_unique<SchedulerDriver>(scheduler_options, state_, *tracker_);
  health_ = std::make_unique<HealthDriver>(options_.health_config, state_, connections_, *tracker_, options_.clock);
  retention_ = std::make_unique<RetentionDriver>(options_.retention, state_, *tracker_, options_.clock);
  usage_ = std::make_unique<UsageDriver>(options_.usage, state_, *tracker_, options_.clock);
  session_leases_ = std::make_unique<SessionLeaseDriver>(state_, *tracker_, options_.clock, options_.preempt_grace_ms);
  alerts_ = std::make_unique<AlertDriver>(options_.alerts, state_, connections_, *tracker_, options_.clock);
  leader_services_ = {health_.get(), retention_.get(), usage_.get(), session_leases_.get(), alerts_.get(),
                      watches_.get()};
}

Status Coordinator::Secure() {
  if (options_.curve_keys.secret_key.empty()) return Status::Ok();
  if (!security::CurveAvailable()) {
    return Status::FailedPrecondition("libzmq was built without CURVE (libsodium): run with --insecure or "
                                      "install a libzmq with CURVE");
  }
  keys_ = std::make_unique<KeyDirectory>(options_.worker_enrolment);
  keys_->SetAdminKey(options_.admin_key);
  key_sync_ = KeySync(keys_.get(), !options_.admin_key.empty());
  // The handler is bound before any server socket, so no handshake can
  // happen without it (a CURVE server with no handler admits anyone).
  GPOOL_ASSIGN_OR_RETURN(zap_, security::ZapHandler::Start(context_, [keys = keys_.get()](std::string_view domain,
                                                                                         std::string_view key) {
                           return keys->Authorize(domain, key);
                         }));
  GPOOL_RETURN_IF_ERROR(security::MakeCurveServer(clients_, options_.curve_keys, security::kClientsDomain));
  GPOOL_RETURN_IF_ERROR(security::MakeCurveServer(workers_, options_.curve_keys, security::kWorkersDomain));
  spdlog::info("curve on public_key={} worker_enrolment={} admin_key={}", options_.curve_keys.public_key,
               WorkerEnrolmentName(options_.worker_enrolment), options_.admin_key.empty() ? "-" : options_.admin_key);
  return Status::Ok();
}

Status Coordinator::OpenLog() {
  replication::ReplicaSetOptions replicas = options_.replicas;
  replicas.token = options_.token;
  replicas.curve_keys = options_.curve_keys;
  if (keys_) {
    // The replicas named on the command line are admitted before the peer
    // port binds: a handshake refused in between would never be retried by
    // the peer's libzmq.
    keys_->SetReplicas(options_.replicas.peer_keys);
    // The peers admitted on the peer port are the replicas the transport
    // connects to: the configuration's, as Raft learns it.
    replicas.on_peer_added = [keys = keys_.get()](uint64_t id, const std::string& key) { keys->AddReplica(id, key); };
    replicas.on_peer_removed = [keys = keys_.get()](uint64_t id) { keys->RemoveReplica(id); };
    replicas.replica_of_user_id = [](std::string_view user_id) -> uint64_t {
      auto principal = Principal::Parse(user_id);
      if (!principal || principal->kind != Principal::Kind::kReplica) return 0;
      uint64_t id = 0;
      const auto& name = principal->name;
      auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), id);
      return error == std::errc() && end == name.data() + name.size() ? id : 0;
    };
  }
  replicas.clock = options_.clock;
  GPOOL_ASSIGN_OR_RETURN(replication::ReplicaSet set,
                         replication::OpenReplicaSet(replicas, log_store_.get(), context_));
  peers_ = std::move(set.transport);
  log_ = std::move(set.log);
  return Status::Ok();
}

Status Coordinator::Recover() {
  GPOOL_ASSIGN_OR_RETURN(log::Committed recovered, log_->Recover());
  if (recovered.snapshot.has_value()) {
    GPOOL_RETURN_IF_ERROR(state_.Restore(recovered.snapshot->data).WithContext("loading snapshot"));
    snapshots_.Covered(recovered.snapshot->index, recovered.snapshot->data.size());
  }
  uint64_t replayed = 0;
  for (const auto& entry : recovered.entries) {
    if (entry.index <= state_.applied_index()) continue;
    auto command = state::DecodeCommand(entry.data);
    if (!command.ok()) {
      return command.status().WithContext("log entry " + std::to_string(entry.index) + " is corrupt");
    }
    state_.Apply(entry.index, *command);
    snapshots_.Applied(entry.index, entry.data.size());
    ++replayed;
  }
  feed_.Reset(state_);  // watches resume from here on
  spdlog::info("state recovered snapshot_index={} replayed={}", snapshots_.last_index(), replayed);
  return Status::Ok();
}

Status Coordinator::Bind() {
  // Frames past the decode limit get a typed error; frames far past it are
  // not even buffered (the peer is disconnected instead, without a word), so
  // the cut is never below what clients may send (kMinReadableFrameBytes).
  const int64_t max_message = static_cast<int64_t>(
      std::max<size_t>(options_.max_frame_bytes * 4, kMinReadableFrameBytes + 64 * 1024));
  for (auto* socket : {&clients_, &workers_}) {
    socket->set(zmq::sockopt::linger, 0);
    socket->set(zmq::sockopt::maxmsgsize, max_message);
    socket->set(zmq::sockopt::sndhwm, 100'000);
    socket->set(zmq::sockopt::rcvhwm, 100'000);
  }
  try {
    clients_.bind(BindableEndpoint(options_.client_endpoint));
    workers_.bind(BindableEndpoint(options_.worker_endpoint));
  } catch (const zmq::error_t& e) {
    return Status::Unavailable(std::string("cannot bind: ") + e.what() + " (client " + options_.client_endpoint +
                               ", worker " + options_.worker_endpoint + ")");
  }
  client_endpoint_ = clients_.get(zmq::sockopt::last_endpoint);
  worker_endpoint_ = workers_.get(zmq::sockopt::last_endpoint);
  return Status::Ok();
}

void Coordinator::WriteEndpoints() {
  // Tests and scripts that ask for ephemeral ports read them from here. A
  // full disk must not stop the coordinator: the file is written again once
  // the data dir takes writes.
  std::vector<std::pair<std::string, std::string>> ports = {{"client", client_endpoint_}, {"worker", worker_endpoint_}};
  if (peers_) ports.emplace_back("peer", peers_->listen_endpoint());
  if (http_) ports.emplace_back("http", http_->address());
  Status written = WriteEndpointsFile(options_.data_dir, ports);
  endpoints_written_ = written.ok();
  if (!written.ok()) {
    spdlog::warn("endpoints file not written; retried once the data dir takes writes error=\"{}\"",
                 written.ToString());
  }
}

void Coordinator::ToClient(const std::string& peer, std::string frame) {
  if (bridge_ && bridge_->Deliver(peer, frame)) return;  // an HTTP request's reply
  clients_.send(zmq::buffer(peer), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  clients_.send(zmq::buffer(frame), zmq::send_flags::dontwait);
}

void Coordinator::ToWorker(const std::string& peer, std::string frame) {
  workers_.send(zmq::buffer(peer), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  workers_.send(zmq::buffer(frame), zmq::send_flags::dontwait);
}

void Coordinator::Drain(zmq::socket_t& socket, bool from_clients) {
  DrainRouter(
      socket, kMaxFramesPerDrain,
      [&](const std::string& peer, std::string_view bytes, const Principal& sender) {
        const int64_t now = options_.clock->MonoMs();
        from_clients ? gateway_->OnFrame(peer, bytes, now, sender) : registry_->OnFrame(peer, bytes, now, sender);
      },
      [&](const std::string& peer, const Status& why) {
        std::string error = MakeError(0, tracker_->epoch(), why);
        from_clients ? ToClient(peer, std::move(error)) : ToWorker(peer, std::move(error));
      });
}

Status Coordinator::CommitAndApply() {
  bool applied_any = false;
  tracker_->IssueReads();
  tracker_->AfterSync();  // a single replica's reads are ready at once
  // A data dir that refuses writes is a mode, not an error (disk_full_mode.h):
  // nothing is written until it takes writes again, and the loop goes on
  // serving reads.
  while (log_->HasUnsynced() && disk_->CheckWrite().ok()) {
    auto committed = log_->Sync();
    if (!committed.ok()) {
      // LocalLog: nothing of this Sync is durable (ResumeWrites drops what
      // LevelDB might still replay), so its proposals fail with the refusal.
      const Status refusal = disk_->WriteFailed(committed.status(), "committing proposals");
      tracker_->FailProposals(refusal);
      break;
    }
    applied_any = applied_any || !committed->empty();
    GPOOL_RETURN_IF_ERROR(Apply(std::move(committed).value()));
    tracker_->AfterSync();
    if (Status held = log_->write_error(); !held.ok()) {
      // RaftLog: the Ready it could not persist waits, unsent and unapplied;
      // its proposals wait too (failed with NotLeader if leadership moves).
      (void)disk_->WriteFailed(held, "persisting raft state");
      break;
    }
  }
  FollowLeadership();
  if (applied_any && tracker_->leading()) {
    scheduler_->MarkDirty();
    dispatcher_->Tick(options_.clock->MonoMs());
  }
  return Status::Ok();
}

Status Coordinator::Apply(log::Committed committed) {
  const uint64_t snapshot_index = committed.snapshot ? committed.snapshot->index : 0;
  for (const auto& entry : committed.entries) {
    if (entry.index < snapshot_index) ApplyEntry(entry);
  }
  if (committed.snapshot.has_value()) {
    // A follower that fell behind the leader's log: its state is replaced.
    Status restored = state_.Restore(committed.snapshot->data);
    if (!restored.ok()) return restored.WithContext("installing the snapshot from the leader");
    snapshots_.Covered(snapshot_index, committed.snapshot->data.size());
    key_sync_.SyncAll(state_);
    feed_.Reset(state_);
    watches_->DropAll();
    spdlog::info("state replaced by snapshot index={} jobs={} nodes={}", snapshot_index, state_.jobs().size(),
                 state_.nodes().size());
  }
  for (const auto& entry : committed.entries) {
    if (entry.index > snapshot_index) ApplyEntry(entry);
  }
  return Status::Ok();
}

void Coordinator::ApplyEntry(const storage::LogEntry& entry) {
  snapshots_.Applied(entry.index, entry.data.size());
  auto command = state::DecodeCommand(entry.data);
  state::ApplyResult result;
  if (command.ok()) {
    feed_.Note(state_, *command);
    result = state_.Apply(entry.index, *command);
    watches_->Publish(feed_.Record(state_, entry.index, *command, result));
    key_sync_.Applied(*command, result, state_);
  } else {
    result.status = command.status();
  }
  tracker_->Settle(entry.index, entry.term, result);
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
  for (LeaderService* service : leader_services_) service->Reset();
}

Status Coordinator::Run(const std::atomic<bool>& stop) {
  std::vector<zmq::pollitem_t> items = {{clients_.handle(), 0, ZMQ_POLLIN, 0}, {workers_.handle(), 0, ZMQ_POLLIN, 0}};
  const size_t wake_item = items.size();
  if (wake_fd_ >= 0) items.push_back({nullptr, wake_fd_, ZMQ_POLLIN, 0});
  const size_t inbox_item = items.size();
  if (inbox_) items.push_back({nullptr, inbox_->fd(), ZMQ_POLLIN, 0});
  if (peers_) items.push_back({peers_->inbound().handle(), 0, ZMQ_POLLIN, 0});
  int64_t last_dispatch = 0;
  while (!stop.load()) {
    try {
      // A replica paused by a full disk (below) has no Raft timers to keep.
      const bool paused = disk_->full() && !log_->IsLeader();
      const int64_t wait_ms =
          paused ? options_.schedule_interval_ms : std::min(options_.schedule_interval_ms, log_->MsUntilDue());
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(wait_ms));
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
    disk_->Tick();
    if (!endpoints_written_ && !disk_->full()) WriteEndpoints();
    GPOOL_RETURN_IF_ERROR(CommitAndApply());
    if (items[0].revents & ZMQ_POLLIN) Drain(clients_, /*from_clients=*/true);
    if (items[1].revents & ZMQ_POLLIN) Drain(workers_, /*from_clients=*/false);
    if (inbox_ && (items[inbox_item].revents & ZMQ_POLLIN)) {
      inbox_->RunPending();  // HTTP requests: metrics renders, JSON API requests
      GPOOL_RETURN_IF_ERROR(CommitAndApply());
    }
    if (options_.reload_scheduler_config != nullptr && options_.reload_scheduler_config->exchange(false)) {
      ReloadSchedulerConfig(options_.scheduler_config_path, *scheduler_, *health_);
    }
    const int64_t now = options_.clock->MonoMs();
    const bool leading = tracker_->leading();
    if (leading) registry_->Tick(now);
    GPOOL_RETURN_IF_ERROR(CommitAndApply());
    if (leading && scheduler_->Tick(now)) GPOOL_RETURN_IF_ERROR(CommitAndApply());
    if (leading) {
      for (LeaderService* service : leader_services_) service->Tick(now);
      GPOOL_RETURN_IF_ERROR(CommitAndApply());
    }
    if (leading && now - last_dispatch >= 200) {
      dispatcher_->Tick(now);
      last_dispatch = now;
    }
    worker_relay_->Tick(now);
    gateway_->Tick(now);
    tracker_->ExpireReads(now);
    MaybeTakeSnapshot(snapshots_, state_, *log_, *disk_, metrics_ ? &metrics_->replication : nullptr);
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
