// Dispatcher: keeps workers in step with committed placements.
//
// For every task that is bound but not yet running, it sends BindTask to the
// task's node until the worker acknowledges; for every task whose stop was
// requested (cancel, job failure) it sends PreemptTask likewise. Commands are
// idempotent on the worker, so resending after a lost ack, a reconnect or a
// coordinator restart is safe. It reads where nodes are connected from the
// WorkerTable and hears of connections, settled tasks and worker replies as
// WorkerEvents from the NodeRegistry; it never calls the registry.
// Only the serving leader ticks it; Reset() empties it when leadership
// changes, so a new leader re-sends every bind and preempt that is due (its
// predecessor's acknowledgements are not known here).
// Resources are never freed here: only a committed TaskEvent frees them.
//
// Work is proportional to what changed, not to the cluster: the state keeps
// an index of the tasks that need a command (ClusterState::
// ForEachCommandDueAfter), ordered by a sequence number, so a Tick reads only
// the entries added since the last one; commands sent wait on a timer heap
// for their resend; and a record is kept only while its command is in
// flight: it goes when the task's event commits (TaskSettled, from the node
// registry's TaskSettled), when its timer finds the task no longer due, or at the latest at
// the next sweep. A cluster whose tasks all run holds nothing here. Apart
// from the one map entry per command in flight, the bookkeeping is in
// vectors (timers, reply lookup) that are compacted lazily and released
// when nothing is in flight: per-task tree nodes that come and go within a
// second would otherwise be left as holes between the long-lived records of
// the state, and the heap would stay larger than what it holds.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "control/metrics/metric_sets.h"
#include "control/ports.h"
#include "control/training_env.h"
#include "control/worker_table.h"
#include "protocol/base/clock.h"
#include "protocol/envelope.h"

namespace gpool::control {

struct DispatcherOptions {
  int64_t ack_timeout_ms = 2000;   // resend an unacknowledged command after this long
  int64_t reconfirm_ms = 10'000;   // resend an acknowledged one that has not taken effect
  int64_t sweep_ms = 1000;         // drop records of tasks that settled by a path nobody reported
  int64_t reconfirm_max_ms = 160'000;  // the reconfirm interval doubles up to this
  uint32_t window_per_node = 64;   // commands unacknowledged at once per node; at least 1
  uint32_t preempt_grace_ms = 10'000;
  // The client endpoint(s) tasks reach the coordinator on (GPOOL_COORDINATOR
  // in every bind, so `gpool exec` works inside a task); empty: not set.
  std::string client_endpoints;
  // CurveZMQ: the public key of the coordinator at client_endpoints
  // (GPOOL_COORDINATOR_PUBLIC_KEY in every bind), so a task's `gpool`
  // reaches it with its job's exec key; empty: insecure, not set.
  std::string coordinator_public_key;
  // Command acknowledgement latency for /metrics (the clock the loop's
  // now_ms comes from); null: not measured.
  WorkerMetrics* metrics = nullptr;
  const Clock* clock = nullptr;
  // When set, asked at each bind for {endpoints, public keys} (comma-
  // separated, same order) instead of the two above: every replica a task
  // may be redirected to after a failover, with its key.
  std::function<std::pair<std::string, std::string>()> coordinator_contacts;
};

class Dispatcher final : public WorkerEvents {
 public:
  Dispatcher(const DispatcherOptions& options, const state::ClusterState& state, const WorkerTable& workers,
             RequestIds& request_ids, Outbox& outbox, Proposer& proposer);

  // Sends what is due. Call after every apply and periodically.
  void Tick(int64_t now_ms);
  // WorkerEvents.
  // A task's event committed (it started, exited or failed): if no command
  // is due for it any more, its record goes now rather than at its timer.
  void TaskSettled(const TaskId& task) override;
  // A reply from a worker (Ack, ErrorReply) to one of our commands; replies
  // to others' requests, or from another node than the command went to,
  // are ignored.
  void WorkerReplied(const std::string& node, const Envelope& envelope) override;
  // Forget what was sent to a node: it reconnected and must get everything again.
  void NodeConnected(const std::string& node) override;

  // Forget everything sent.
  void Reset();

  // Commands sent or waiting for their node's window, not yet settled.
  size_t in_flight() const { return commands_.size(); }
  // Commands due but held back by their node's window.
  size_t waiting() const { return waiting_; }

 private:
  enum class Kind { kBind, kPreempt };
  struct Sent {
    uint64_t request_id = 0;  // 0 while waiting: no reply matches it
    int64_t sent_ms = 0;
    int64_t recheck_ms = 0;  // when its timer runs out
    Kind kind = Kind::kBind;
    bool acked = false;
    bool waiting = false;    // queued behind its node's window
    bool in_window = false;  // holds one of its node's slots: sent, not yet answered
    uint8_t resends = 0;     // unanswered sends of this kind in a row
    uint8_t reconfirms = 0;  // confirmations of this kind after an acknowledgement
    uint64_t window_id = 0;  // the window (node connection) it counts in
    std::string node;
  };
  // One node's commands awaiting an answer, and those waiting for a slot.
  // A window lives as long as its node's connection: a re-registration
  // starts a new one (a new id), so nothing of the old connection counts.
  struct Window {
    uint64_t id = 0;
    uint32_t unanswered = 0;
    uint32_t queued = 0;       // live entries in `queue`
    std::deque<TaskId> queue;  // stale entries skipped when popped
  };
  // A timer: valid while the task's record still has this request and time.
  struct Timer {
    int64_t at_ms = 0;
    uint64_t request_id = 0;
    TaskId task;
    bool operator>(const Timer& other) const { return at_ms > other.at_ms; }
  };

  // Sends the task's due command if it was never sent, changed kind, or
  // its timer ran out; drops the record of a task with nothing due.
  void Consider(const TaskId& id, int64_t now_ms);
  void Send(const state::TaskRecord& task, Kind kind, const std::string& peer, int64_t now_ms);
  Window& WindowOf(const std::string& node);
  // Gives back the slot a record holds, or takes it off its queue.
  void Release(Sent& sent);
  // Puts a due command behind its node's window.
  void Enqueue(const TaskId& id, const std::string& node, Kind kind);
  // Sends what fits in the windows of nodes that had a slot freed.
  void Pump(int64_t now_ms);
  int64_t Now() const;
  void Arm(const TaskId& id, Sent& sent, int64_t at_ms);
  void Drop(std::map<TaskId, Sent>::iterator it);
  void Sweep();
  // The record a reply's request id belongs to, if it is still current.
  std::map<TaskId, Sent>::iterator FindRequest(uint64_t request_id);
  // Drops stale timers and request entries once they outnumber the records.
  void Compact();
  // A job's training layout, computed once per tick for all its tasks.
  const TrainingLayout& LayoutFor(const state::JobRecord& job, const state::TaskRecord& task);

  DispatcherOptions options_;
  const state::ClusterState& state_;
  const WorkerTable& workers_;
  RequestIds& request_ids_;
  Outbox& outbox_;
  Proposer& proposer_;
  std::map<TaskId, Sent> commands_;
  // (request id, task) in request-id order (ids only grow); an entry is
  // current while its task's record carries that request id.
  std::vector<std::pair<uint64_t, TaskId>> by_request_;
  std::vector<Timer> timers_;  // a min-heap on at_ms; stale entries skipped
  uint64_t seen_seq_ = 0;      // commands due up to this seq were considered
  std::vector<TaskId> recheck_;                  // tasks of nodes that (re)connected
  std::unordered_map<std::string, Window> windows_;
  std::vector<std::string> freed_;  // nodes with a slot freed and commands queued
  uint64_t next_window_id_ = 1;
  size_t waiting_ = 0;
  int64_t last_now_ms_ = 0;
  int64_t next_sweep_ms_ = 0;
  std::unordered_map<uint64_t, TrainingLayout> layouts_;  // by job; only during Tick
};

}  // namespace gpool::control
