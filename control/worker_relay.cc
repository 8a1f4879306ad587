#include "control/worker_relay.h"
#include "protocol/message_type.h"
#include "protocol/messages_common.h"

#include <utility>

namespace gpool::control {

WorkerRelay::WorkerRelay(const WorkerRelayOptions& options, const WorkerTable& workers, RequestIds& request_ids,
                         Outbox& outbox, Proposer& proposer)
    : options_(options), workers_(workers), request_ids_(request_ids), outbox_(outbox), proposer_(proposer) {}

void WorkerRelay::Send(const std::string& node, MessageType reply_type,
                       const std::function<std::string(uint64_t, uint64_t)>& frame, int64_t now_ms,
                       EnvelopeCallback done) {
  const std::string* peer = workers_.PeerFor(node);
  if (peer == nullptr) return done(Status::Unavailable("node " + node + " is not connected"));
  const uint64_t request_id = request_ids_.Next();
  requests_[request_id] = Asking{node, reply_type, now_ms + options_.timeout_ms, std::move(done)};
  outbox_.ToWorker(*peer, frame(request_id, proposer_.epoch()));
}

void WorkerRelay::WorkerReplied(const std::string& node, const Envelope& reply) {
  auto it = requests_.find(reply.header().request_id);
  if (it == requests_.end() || it->second.node != node) return;
  if (reply.type() != it->second.reply_type && reply.type() != MessageType::kErrorReply) return;
  auto done = std::move(it->second.done);
  requests_.erase(it);
  if (reply.type() == MessageType::kErrorReply) {
    auto error = reply.Body<ErrorReply>();
    return done(error.ok() ? error->ToStatus() : error.status());
  }
  done(reply);
}

void WorkerRelay::Tick(int64_t now_ms) {
  for (auto it = requests_.begin(); it != requests_.end();) {
    if (now_ms < it->second.deadline_ms) {
      ++it;
      continue;
    }
    auto done = std::move(it->second.done);
    const std::string node = it->second.node;
    it = requests_.erase(it);
    done(Status::Unavailable("node " + node + " did not answer in time"));
  }
}

void WorkerRelay::Reset(const Status& why) {
  auto requests = std::move(requests_);
  requests_.clear();
  for (auto& [id, request] : requests) request.done(why);
}

}  // namespace gpool::control
