#include "control/coordinator.h"

#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

#include "control/frames.h"

namespace gpool::control {
namespace {

constexpr int kMaxFramesPerDrain = 1000;

// ZeroMQ spells "any free port" as '*'; accept the familiar ':0' too.
std::string NormalizeEndpoint(std::string endpoint) {
  if (endpoint.size() > 2 && endpoint.compare(endpoint.size() - 2, 2, ":0") == 0) {
    endpoint.replace(endpoint.size() - 1, 1, "*");
  }
  return endpoint;
}

Status WriteFileAtomically(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content;
    if (!out) return Status::IoError("cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::IoError("cannot rename " + tmp.string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

Coordinator::Coordinator(const CoordinatorOptions& options)
    : options_(options), context_(1), clients_(context_, zmq::socket_type::router),
      workers_(context_, zmq::socket_type::router) {}

Coordinator::~Coordinator() {
  clients_.close();
  workers_.close();
}

Result<std::unique_ptr<Coordinator>> Coordinator::Open(const CoordinatorOptions& options) {
  std::unique_ptr<Coordinator> c(new Coordinator(options));
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) return Status::IoError("cannot create data dir " + options.data_dir + ": " + ec.message());

  storage::LevelDbOptions db_options;
  db_options.path = (std::filesystem::path(options.data_dir) / "db").string();
  GPOOL_ASSIGN_OR_RETURN(c->kv_, storage::LevelDbStore::Open(db_options));
  GPOOL_ASSIGN_OR_RETURN(c->log_store_, storage::LogStore::Open(c->kv_.get()));
  GPOOL_RETURN_IF_ERROR(c->Recover());
  GPOOL_ASSIGN_OR_RETURN(c->log_, log::LocalLog::Open(c->log_store_.get()));
  GPOOL_RETURN_IF_ERROR(c->Bind());

  const int64_t now = options.clock->MonoMs();
  NodeRegistryOptions registry_options;
  registry_options.heartbeat_interval_ms = options.heartbeat_interval_ms;
  registry_options.node_timeout_ms = options.node_timeout_ms;
  registry_options.token = options.token;
  registry_options.coordinator_id = options.replica_id;
  registry_options.limits.max_frame_bytes = options.max_frame_bytes;
  registry_options.clock = options.clock;
  c->registry_ = std::make_unique<NodeRegistry>(registry_options, c->state_, *c, *c, now);

  DispatcherOptions dispatcher_options;
  dispatcher_options.preempt_grace_ms = options.preempt_grace_ms;
  c->dispatcher_ = std::make_unique<Dispatcher>(dispatcher_options, c->state_, *c->registry_, *c, *c);
  c->registry_->set_dispatcher(c->dispatcher_.get());

  GatewayOptions gateway_options;
  gateway_options.token = options.token;
  gateway_options.replica_id = options.replica_id;
  gateway_options.client_address = c->client_endpoint_;
  gateway_options.limits.max_frame_bytes = options.max_frame_bytes;
  c->gateway_ = std::make_unique<Gateway>(gateway_options, c->state_, *c, *c, *c->dispatcher_, *c->registry_);

  SchedulerDriverOptions scheduler_options;
  scheduler_options.policy.strategy = options.strategy;
  scheduler_options.interval_ms = options.schedule_interval_ms;
  c->scheduler_ = std::make_unique<SchedulerDriver>(scheduler_options, c->state_, *c);

  spdlog::info("coordinator ready replica={} epoch={} client={} worker={} jobs={} nodes={} applied={}",
               options.replica_id, c->log_->term(), c->client_endpoint_, c->worker_endpoint_, c->state_.jobs().size(),
               c->state_.nodes().size(), c->state_.applied_index());
  return c;
}

Status Coordinator::Recover() {
  auto snapshot = log_store_->LoadSnapshot();
  if (!snapshot.ok()) return snapshot.status().WithContext("loading snapshot");
  if (snapshot->has_value()) {
    const auto& [meta, data] = **snapshot;
    GPOOL_RETURN_IF_ERROR(state_.Restore(data));
    last_snapshot_index_ = meta.index;
  }
  uint64_t next = log_store_->FirstIndex();
  const uint64_t end = log_store_->LastIndex() + 1;
  uint64_t replayed = 0;
  while (next < end) {
    auto entries = log_store_->Entries(next, end, 64 << 20);
    if (!entries.ok()) return entries.status().WithContext("replaying log");
    for (const auto& entry : *entries) {
      if (entry.index > state_.applied_index()) {
        auto command = state::DecodeCommand(entry.data);
        if (!command.ok()) {
          return command.status().WithContext("log entry " + std::to_string(entry.index) + " is corrupt");
        }
        state_.Apply(entry.index, *command);
        ++replayed;
      }
      next = entry.index + 1;
    }
  }
  spdlog::info("state recovered snapshot_index={} replayed={}", last_snapshot_index_, replayed);
  return Status::Ok();
}

Status Coordinator::Bind() {
  const int64_t max_message = static_cast<int64_t>(options_.max_frame_bytes) * 4;
  for (auto* socket : {&clients_, &workers_}) {
    socket->set(zmq::sockopt::linger, 0);
    // Frames past the decode limit get a typed error; frames far past it are
    // not even buffered (the peer is disconnected instead).
    socket->set(zmq::sockopt::maxmsgsize, max_message);
    socket->set(zmq::sockopt::sndhwm, 100'000);
    socket->set(zmq::sockopt::rcvhwm, 100'000);
  }
  try {
    clients_.bind(NormalizeEndpoint(options_.client_endpoint));
    workers_.bind(NormalizeEndpoint(options_.worker_endpoint));
  } catch (const zmq::error_t& e) {
    return Status::Unavailable(std::string("cannot bind: ") + e.what() + " (client " + options_.client_endpoint +
                               ", worker " + options_.worker_endpoint + ")");
  }
  client_endpoint_ = clients_.get(zmq::sockopt::last_endpoint);
  worker_endpoint_ = workers_.get(zmq::sockopt::last_endpoint);
  // Tests and scripts that ask for ephemeral ports read them from here.
  return WriteFileAtomically(std::filesystem::path(options_.data_dir) / "endpoints",
                             "client " + client_endpoint_ + "\nworker " + worker_endpoint_ + "\n");
}

void Coordinator::ToClient(const std::string& peer, std::string frame) {
  clients_.send(zmq::buffer(peer), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  clients_.send(zmq::buffer(frame), zmq::send_flags::dontwait);
}

void Coordinator::ToWorker(const std::string& peer, std::string frame) {
  workers_.send(zmq::buffer(peer), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  workers_.send(zmq::buffer(frame), zmq::send_flags::dontwait);
}

void Coordinator::Propose(state::CommandBody body, ApplyCallback done) {
  state::Command command{options_.clock->WallMs(), std::move(body)};
  auto index = log_->Propose(state::EncodeCommand(command));
  if (!index.ok()) {
    state::ApplyResult failed;
    failed.status = index.status();
    failed.committed = false;
    done(failed);
    return;
  }
  callbacks_[*index] = std::move(done);
}

void Coordinator::Drain(zmq::socket_t& socket, bool from_clients) {
  for (int i = 0; i < kMaxFramesPerDrain; ++i) {
    zmq::message_t identity;
    if (!socket.recv(identity, zmq::recv_flags::dontwait)) return;
    std::string peer = identity.to_string();
    std::vector<zmq::message_t> parts;
    while (socket.get(zmq::sockopt::rcvmore)) {
      zmq::message_t part;
      if (!socket.recv(part, zmq::recv_flags::dontwait)) break;
      parts.push_back(std::move(part));
    }
    const int64_t now = options_.clock->MonoMs();
    if (parts.size() != 1) {
      std::string error = MakeError(0, epoch(), Status::Malformed("expected exactly one frame per message, got " +
                                                                  std::to_string(parts.size())));
      from_clients ? ToClient(peer, std::move(error)) : ToWorker(peer, std::move(error));
      continue;
    }
    std::string_view bytes(static_cast<const char*>(parts[0].data()), parts[0].size());
    if (from_clients) {
      gateway_->OnFrame(peer, bytes, now);
    } else {
      registry_->OnFrame(peer, bytes, now);
    }
  }
}

Status Coordinator::CommitAndApply() {
  bool applied_any = false;
  while (log_->HasUnsynced()) {
    const uint64_t first_unsynced = log_->commit_index() + 1;
    auto committed = log_->Sync();
    if (!committed.ok()) {
      spdlog::error("commit failed error=\"{}\"", committed.status().ToString());
      for (auto it = callbacks_.lower_bound(first_unsynced); it != callbacks_.end();) {
        auto done = std::move(it->second);
        it = callbacks_.erase(it);
        state::ApplyResult failed;
        failed.status = Status::Unavailable("the coordinator could not persist the request: " +
                                            committed.status().message());
        failed.committed = false;
        done(failed);
      }
      return committed.status();
    }
    for (const auto& entry : *committed) {
      auto command = state::DecodeCommand(entry.data);
      state::ApplyResult result;
      if (command.ok()) {
        result = state_.Apply(entry.index, *command);
      } else {
        result.status = command.status();
      }
      applied_any = true;
      auto it = callbacks_.find(entry.index);
      if (it != callbacks_.end()) {
        auto done = std::move(it->second);
        callbacks_.erase(it);
        done(result);
      }
    }
  }
  if (applied_any) {
    scheduler_->MarkDirty();
    dispatcher_->Tick(options_.clock->MonoMs());
  }
  return Status::Ok();
}

void Coordinator::MaybeSnapshot() {
  const uint64_t applied = state_.applied_index();
  if (applied < last_snapshot_index_ + options_.snapshot_every) return;
  Status status = log_->SaveSnapshot(applied, state_.Snapshot());
  if (!status.ok()) {
    spdlog::warn("snapshot failed index={} error=\"{}\"", applied, status.ToString());
    return;
  }
  last_snapshot_index_ = applied;
  spdlog::info("snapshot saved index={}", applied);
}

Status Coordinator::Run(const std::atomic<bool>& stop) {
  zmq::pollitem_t items[] = {{clients_.handle(), 0, ZMQ_POLLIN, 0}, {workers_.handle(), 0, ZMQ_POLLIN, 0}};
  int64_t last_dispatch = 0;
  while (!stop.load()) {
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(options_.schedule_interval_ms));
    } catch (const zmq::error_t& e) {
      // A signal (SIGTERM, SIGINT) interrupts the poll; the loop condition
      // then sees the stop flag.
      if (e.num() == EINTR) continue;
      return Status::Internal(std::string("polling sockets: ") + e.what());
    }
    if (items[0].revents & ZMQ_POLLIN) Drain(clients_, /*from_clients=*/true);
    if (items[1].revents & ZMQ_POLLIN) Drain(workers_, /*from_clients=*/false);
    int64_t now = options_.clock->MonoMs();
    registry_->Tick(now);
    GPOOL_RETURN_IF_ERROR(CommitAndApply());
    if (scheduler_->Tick(now)) GPOOL_RETURN_IF_ERROR(CommitAndApply());
    if (now - last_dispatch >= 200) {
      dispatcher_->Tick(now);
      last_dispatch = now;
    }
    gateway_->set_log_position(Gateway::LogPosition{log_->commit_index()});
    MaybeSnapshot();
  }
  spdlog::info("coordinator stopping applied={}", state_.applied_index());
  return Status::Ok();
}

}  // namespace gpool::control
