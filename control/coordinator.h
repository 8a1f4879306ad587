// Coordinator: the composition root of gpool-coordinator.
//
// Owns the storage, the commit log, the state machine and the components
// (Gateway, NodeRegistry, Dispatcher, SchedulerDriver), and runs them on one
// event-loop thread over two ZeroMQ ROUTER sockets. Components talk to each
// other and to the outside only through messages (Outbox, Proposer), so each
// can later move onto its own thread without changing its logic.
//
// The loop: poll sockets -> hand frames to components -> tick timers ->
// group-commit every proposal of this turn with one fsync -> apply committed
// entries in order -> run the callbacks that reply to clients and workers.
//
// Open() recovers the full state from the data dir (snapshot + log replay).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include <zmq.hpp>

#include "control/dispatcher.h"
#include "control/gateway.h"
#include "control/log/local_log.h"
#include "control/node_registry.h"
#include "control/scheduler_driver.h"
#include "protocol/base/clock.h"
#include "storage/leveldb_store.h"
#include "storage/log_store.h"

namespace gpool::control {

struct CoordinatorOptions {
  std::string data_dir = "/var/lib/gpool/coordinator";
  std::string client_endpoint = "tcp://127.0.0.1:7400";  // clients (ROUTER); port 0 or * = ephemeral
  std::string worker_endpoint = "tcp://127.0.0.1:7401";  // workers (ROUTER)
  std::string replica_id = "coordinator-1";
  std::string token;                                     // empty: no authentication
  scheduler::Strategy strategy = scheduler::Strategy::kBinpack;
  uint32_t heartbeat_interval_ms = 1000;
  int64_t node_timeout_ms = 10'000;
  int64_t schedule_interval_ms = 10;
  uint32_t preempt_grace_ms = 10'000;
  uint64_t snapshot_every = 10'000;                      // entries between snapshots
  size_t max_frame_bytes = 4 * 1024 * 1024;
  const Clock* clock = &SystemClock::Get();
};

class Coordinator final : public Outbox, public Proposer {
 public:
  static Result<std::unique_ptr<Coordinator>> Open(const CoordinatorOptions& options);
  ~Coordinator() override;

  // Serves until `stop` becomes true.
  Status Run(const std::atomic<bool>& stop);

  const std::string& client_endpoint() const { return client_endpoint_; }
  const std::string& worker_endpoint() const { return worker_endpoint_; }
  const state::ClusterState& state() const { return state_; }

  // Outbox
  void ToClient(const std::string& peer, std::string frame) override;
  void ToWorker(const std::string& peer, std::string frame) override;
  // Proposer
  void Propose(state::CommandBody body, ApplyCallback done) override;
  uint64_t epoch() const override { return log_->term(); }

 private:
  explicit Coordinator(const CoordinatorOptions& options);
  Status Recover();
  Status Bind();
  void Drain(zmq::socket_t& socket, bool from_clients);
  Status CommitAndApply();
  void MaybeSnapshot();

  CoordinatorOptions options_;
  std::unique_ptr<storage::LevelDbStore> kv_;
  std::unique_ptr<storage::LogStore> log_store_;
  std::unique_ptr<log::LocalLog> log_;
  state::ClusterState state_;
  std::map<uint64_t, ApplyCallback> callbacks_;
  uint64_t last_snapshot_index_ = 0;

  zmq::context_t context_;
  zmq::socket_t clients_;
  zmq::socket_t workers_;
  std::string client_endpoint_;
  std::string worker_endpoint_;

  std::unique_ptr<NodeRegistry> registry_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<Gateway> gateway_;
  std::unique_ptr<SchedulerDriver> scheduler_;
};

}  // namespace gpool::control
