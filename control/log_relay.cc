#include "control/log_relay.h"

#include <utility>

#include "control/frames.h"

namespace gpool::control {

LogRelay::LogRelay(const LogRelayOptions& options, const WorkerTable& workers, RequestIds& request_ids,
                   Outbox& outbox, Proposer& proposer)
    : options_(options), workers_(workers), request_ids_(request_ids), outbox_(outbox), proposer_(proposer) {}

void LogRelay::Fetch(const std::string& node, const TaskId& task, uint32_t max_bytes, int64_t now_ms,
                     LogCallback done) {
  const std::string* peer = workers_.PeerFor(node);
  if (peer == nullptr) return done(Status::Unavailable("node " + node + " is not connected"));
  const uint64_t request_id = request_ids_.Next();
  fetches_[request_id] = Fetching{node, now_ms + options_.timeout_ms, std::move(done)};
  outbox_.ToWorker(*peer, MakeFrame(request_id, proposer_.epoch(), gpool::FetchLog{task, max_bytes}));
}

void LogRelay::WorkerReplied(const std::string& node, const Envelope& reply) {
  auto it = fetches_.find(reply.header().request_id);
  if (it == fetches_.end() || it->second.node != node) return;
  if (reply.type() != MessageType::kFetchLogReply && reply.type() != MessageType::kErrorReply) return;
  auto done = std::move(it->second.done);
  fetches_.erase(it);
  if (reply.type() == MessageType::kErrorReply) {
    auto error = reply.Body<ErrorReply>();
    return done(error.ok() ? error->ToStatus() : error.status());
  }
  done(reply.Body<FetchLogReply>());
}

void LogRelay::Tick(int64_t now_ms) {
  for (auto it = fetches_.begin(); it != fetches_.end();) {
    if (now_ms < it->second.deadline_ms) {
      ++it;
      continue;
    }
    auto done = std::move(it->second.done);
    it = fetches_.erase(it);
    done(Status::Unavailable("the node did not answer the log request in time"));
  }
}

void LogRelay::Reset(const Status& why) {
  auto fetches = std::move(fetches_);
  fetches_.clear();
  for (auto& [id, fetch] : fetches) fetch.done(why);
}

}  // namespace gpool::control
