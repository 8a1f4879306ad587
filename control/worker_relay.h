// WorkerRelay: asks the worker on a node something on a client's behalf and
// hands back its answer: a task's log (`gpool logs`), and the exec requests
// (`gpool exec`: start, poll, signal).
//
// A request is sent to the node's current connection (WorkerTable) with a
// request id from the coordinator's shared RequestIds, and answered when that
// node replies (WorkerEvents::WorkerReplied from the NodeRegistry) with the
// reply type the request expects or an ErrorReply: a reply from any other
// node, to another request, or of another type is not taken for it. A
// request the node does not answer in time fails with Unavailable, below the
// client's own timeout so the client hears why.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "control/frames.h"
#include "control/ports.h"
#include "control/worker_table.h"
#include "protocol/message_type.h"

namespace gpool::control {

struct WorkerRelayOptions {
  int64_t timeout_ms = 3000;  // below the client's default 5 s, so it gets an answer
};

class WorkerRelay final : public WorkerEvents {
 public:
  using EnvelopeCallback = std::function<void(Result<Envelope>)>;

  WorkerRelay(const WorkerRelayOptions& options, const WorkerTable& workers, RequestIds& request_ids,
              Outbox& outbox, Proposer& proposer);

  // Sends `request` to `node`; `done` runs with the node's Reply, the
  // node's error, Unavailable (not connected, no answer in time) or the
  // reply's decode error.
  template <typename Request, typename Reply>
  void Ask(const std::string& node, const Request& request, int64_t now_ms, std::function<void(Result<Reply>)> done) {
    Send(
        node, Reply::kType, [&](uint64_t id, uint64_t epoch) { return MakeFrame(id, epoch, request); }, now_ms,
        [done = std::move(done)](Result<Envelope> reply) {
          if (!reply.ok()) return done(reply.status());
          done(reply->template Body<Reply>());
        });
  }

  // Fails requests past their deadline.
  void Tick(int64_t now_ms);
  // Fails every request in flight with `why` (leadership changed).
  void Reset(const Status& why);

  // WorkerEvents
  void WorkerReplied(const std::string& node, const Envelope& reply) override;

  size_t in_flight() const { return requests_.size(); }

 private:
  struct Asking {
    std::string node;
    MessageType reply_type = MessageType::kAck;
    int64_t deadline_ms = 0;
    EnvelopeCallback done;
  };

  // The untyped core of Ask: `frame` builds the request for an id and epoch.
  void Send(const std::string& node, MessageType reply_type,
            const std::function<std::string(uint64_t, uint64_t)>& frame, int64_t now_ms, EnvelopeCallback done);

  WorkerRelayOptions options_;
  const WorkerTable& workers_;
  RequestIds& request_ids_;
  Outbox& outbox_;
  Proposer& proposer_;
  std::map<uint64_t, Asking> requests_;  // by request id
};

}  // namespace gpool::control
