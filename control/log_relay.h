// LogRelay: fetches a task's log from the worker that ran it, for a client.
//
// A fetch is sent to the node's current connection (WorkerTable) with a
// request id from the coordinator's shared RequestIds, and answered when that
// node replies (WorkerEvents::WorkerReplied from the NodeRegistry): a reply
// from any other node, or to another request, is not taken for it. A fetch
// the node does not answer in time fails with Unavailable, below the client's
// own timeout so the client hears why.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "control/ports.h"
#include "control/worker_table.h"

namespace gpool::control {

struct LogRelayOptions {
  int64_t timeout_ms = 3000;  // below the client's default 5 s, so it gets an answer
};

class LogRelay final : public WorkerEvents {
 public:
  using LogCallback = std::function<void(Result<FetchLogReply>)>;

  LogRelay(const LogRelayOptions& options, const WorkerTable& workers, RequestIds& request_ids, Outbox& outbox,
           Proposer& proposer);

  // Asks `node` for up to `max_bytes` of the end of `task`'s log; `done`
  // runs with the reply, the node's error, or Unavailable.
  void Fetch(const std::string& node, const TaskId& task, uint32_t max_bytes, int64_t now_ms, LogCallback done);
  // Fails fetches past their deadline.
  void Tick(int64_t now_ms);
  // Fails every fetch in flight with `why` (leadership changed).
  void Reset(const Status& why);

  // WorkerEvents
  void WorkerReplied(const std::string& node, const Envelope& reply) override;

  size_t in_flight() const { return fetches_.size(); }

 private:
  struct Fetching {
    std::string node;
    int64_t deadline_ms = 0;
    LogCallback done;
  };

  LogRelayOptions options_;
  const WorkerTable& workers_;
  RequestIds& request_ids_;
  Outbox& outbox_;
  Proposer& proposer_;
  std::map<uint64_t, Fetching> fetches_;  // by request id
};

}  // namespace gpool::control
