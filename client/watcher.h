// Watcher: follows one watch (docs/protocol.md 7.19) for as long as it is
// read, across reconnections and leader changes, without gaps or repeats.
//
// Next() returns the next batch: first the Watch reply (the current state,
// or the changes since a position given at construction), then each pushed
// update. It renews the watch every renew_ms; when the watch is lost (the
// renewal reports it unknown or fails, pushes skip a seq, the connection
// changed) it opens it again with `after` = the last position returned, so
// the coordinator replays what was missed; a batch then says `reset` only
// when the coordinator could not replay (the client should replace what it
// holds). A state already returned for an item is not returned again (a
// replica that restarted may publish one twice).
//
// Thread-safety: one thread; the Client must not be used by anyone else
// meanwhile (its connection carries the watch).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "client/client.h"
#include "protocol/messages_watch.h"

namespace gpool {

struct WatchBatch {
  bool reset = false;  // the items are the current state: replace what you hold
  uint64_t position = 0;
  WatchItems items;
};

class Watcher {
 public:
  // `request.after`: the position to resume from (0: start with a snapshot).
  Watcher(Client& client, Watch request, std::chrono::milliseconds renew_every = std::chrono::seconds(5));
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // The next batch, waiting up to `timeout`; nullopt when nothing came.
  // Errors the coordinator answers (NotFound, PermissionDenied,
  // InvalidArgument, UnknownType from an old one) are returned; losing the
  // connection is not an error (it re-opens), unless no coordinator answers
  // at all (Unavailable, after the client's retries).
  Result<std::optional<WatchBatch>> Next(std::chrono::milliseconds timeout);

  uint64_t position() const { return position_; }
  uint64_t reopened() const { return reopened_; }  // times the watch was opened again

 private:
  using Clock = std::chrono::steady_clock;
  Result<WatchBatch> Open();
  // Drops what was already returned; true when something is left.
  bool Fresh(WatchBatch& batch);

  Client& client_;
  Watch request_;
  std::chrono::milliseconds renew_every_;
  uint64_t watch_id_ = 0;  // 0: not open
  uint64_t next_seq_ = 1;
  uint64_t position_ = 0;
  uint64_t reopened_ = 0;
  bool opened_once_ = false;
  Clock::time_point next_renew_;
  // The last state returned per job and per node, as encoded bytes' hash.
  std::unordered_map<uint64_t, size_t> job_prints_;
  std::unordered_map<std::string, size_t> node_prints_;
};

}  // namespace gpool
