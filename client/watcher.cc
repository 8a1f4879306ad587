#include "client/watcher.h"

#include <functional>
#include <string_view>
#include <thread>

#include "protocol/fingerprint.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_watch.h"

namespace gpool {

namespace {

// Whether the error means this connection's watch is gone, not that the
// watch cannot be had.
bool Transient(const Status& status) {
  return status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kNotLeader ||
         status.code() == StatusCode::kDeadlineExceeded;
}

}  // namespace

Watcher::Watcher(Client& client, Watch request, std::chrono::milliseconds renew_every)
    : client_(client), request_(std::move(request)), renew_every_(renew_every) {
  position_ = request_.after;
}

Watcher::~Watcher() {
  if (watch_id_ != 0) (void)client_.Unwatch(watch_id_);
}

Result<WatchBatch> Watcher::Open() {
  request_.after = position_;
  GPOOL_ASSIGN_OR_RETURN(WatchReply reply, client_.Watch(request_));
  if (opened_once_) ++reopened_;
  opened_once_ = true;
  watch_id_ = reply.watch_id;
  next_seq_ = 1;
  position_ = reply.position;
  next_renew_ = Clock::now() + renew_every_;
  WatchBatch batch;
  batch.reset = reply.reset;
  batch.position = reply.position;
  batch.items = std::move(reply.items);
  return batch;
}

bool Watcher::Fresh(WatchBatch& batch) {
  std::erase_if(batch.items.jobs, [&](const JobSummary& job) {
    const size_t print = Fingerprint(job);
    auto [it, first] = job_prints_.try_emplace(job.job_id, print);
    if (!first && it->second == print && !batch.reset) return true;
    it->second = print;
    return false;
  });
  std::erase_if(batch.items.nodes, [&](const NodeSummary& node) {
    const size_t print = Fingerprint(node);
    auto [it, first] = node_prints_.try_emplace(node.name, print);
    if (!first && it->second == print && !batch.reset) return true;
    it->second = print;
    return false;
  });
  return batch.reset || !batch.items.empty();
}

Result<std::optional<WatchBatch>> Watcher::Next(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    if (watch_id_ == 0) {
      Result<WatchBatch> opened = Open();
      if (!opened.ok()) {
        // No leader yet (an election): try again until the caller's deadline.
        if (!Transient(opened.status()) || Clock::now() >= deadline) return opened.status();
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        continue;
      }
      if (Fresh(*opened)) return std::optional<WatchBatch>(std::move(opened).value());
    }
    const auto now = Clock::now();
    if (now >= next_renew_) {
      next_renew_ = now + renew_every_;
      Result<WatchRenewReply> renewed = client_.WatchRenew(WatchRenew{{watch_id_}});
      if (!renewed.ok() && !Transient(renewed.status())) return renewed.status();
      if (!renewed.ok() || !renewed->unknown.empty()) {
        watch_id_ = 0;  // lost: re-open from position_, which replays the gap
        continue;
      }
    }
    if (now >= deadline) return std::optional<WatchBatch>();
    const auto wait = std::min(deadline, next_renew_) - now;
    Result<std::optional<WatchUpdate>> push =
        client_.NextPush(static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count()));
    if (!push.ok()) {
      if (!Transient(push.status())) return push.status();
      watch_id_ = 0;
      continue;
    }
    if (!push->has_value() || (*push)->watch_id != watch_id_) continue;
    WatchUpdate& update = **push;
    if (update.seq != next_seq_) {
      // Pushes were dropped on the way: replay them from our position.
      watch_id_ = 0;
      continue;
    }
    ++next_seq_;
    position_ = update.position;
    WatchBatch batch;
    batch.position = update.position;
    batch.items = std::move(update.items);
    if (Fresh(batch)) return std::optional<WatchBatch>(std::move(batch));
  }
}

}  // namespace gpool
