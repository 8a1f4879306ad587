// Dispatcher: keeps workers in step with committed placements.
//
// For every task that is bound but not yet running, it sends BindTask to the
// task's node until the worker acknowledges; for every task whose stop was
// requested (cancel, job failure) it sends PreemptTask likewise. Commands are
// idempotent on the worker, so resending after a lost ack, a reconnect or a
// coordinator restart is safe. It also relays log fetches to workers.
// Only the serving leader ticks it; Reset() empties it when leadership
// changes, so a new leader re-sends every bind and preempt that is due (its
// predecessor's acknowledgements are not known here).
// Resources are never freed here: only a committed TaskEvent frees them.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "control/ports.h"
#include "protocol/envelope.h"

namespace gpool::control {

class NodeRegistry;

struct DispatcherOptions {
  int64_t ack_timeout_ms = 2000;   // resend an unacknowledged command after this long
  int64_t reconfirm_ms = 10'000;   // resend an acknowledged one that has not taken effect
  int64_t log_fetch_timeout_ms = 3000;  // below the client's default 5 s, so it gets an answer
  uint32_t preempt_grace_ms = 10'000;
};

class Dispatcher {
 public:
  using LogCallback = std::function<void(Result<FetchLogReply>)>;

  Dispatcher(const DispatcherOptions& options, const state::ClusterState& state, const NodeRegistry& registry,
             Outbox& outbox, Proposer& proposer);

  // Sends what is due. Call after every apply and periodically.
  void Tick(int64_t now_ms);
  // A reply from a worker (Ack, ErrorReply, FetchLogReply) to one of our commands.
  void OnWorkerReply(const Envelope& envelope);
  void FetchLog(const std::string& node, const TaskId& task, uint32_t max_bytes, int64_t now_ms, LogCallback done);
  // Forget what was sent to a node: it reconnected and must get everything again.
  void ForgetNode(const std::string& node);
  // Forget everything sent; pending log fetches fail with `why`.
  void Reset(const Status& why);

  size_t in_flight() const { return commands_.size(); }

 private:
  enum class Kind { kBind, kPreempt };
  struct Sent {
    Kind kind = Kind::kBind;
    std::string node;
    uint64_t request_id = 0;
    int64_t sent_ms = 0;
    bool acked = false;
  };
  struct LogFetch {
    int64_t deadline_ms = 0;
    LogCallback done;
  };

  bool Due(const Sent* sent, Kind kind, int64_t now_ms) const;
  void Send(const state::TaskRecord& task, Kind kind, const std::string& peer, int64_t now_ms);

  DispatcherOptions options_;
  const state::ClusterState& state_;
  const NodeRegistry& registry_;
  Outbox& outbox_;
  Proposer& proposer_;
  uint64_t next_request_id_ = 1;
  std::map<TaskId, Sent> commands_;
  std::map<uint64_t, TaskId> by_request_;
  std::map<uint64_t, LogFetch> log_fetches_;
};

}  // namespace gpool::control
