// InflightRequests: the client requests each key has sent and not yet had
// answered (a proposal waiting for commit, a read waiting for the barrier,
// an ask relayed to a worker), so one key cannot fill the proposal queue or
// the relay for everyone else (issue 48: --max-inflight-per-key). One more
// is refused at once, with ResourceExhausted naming the limit.
//
// A request is open from Admit until a reply to its (peer, request id) goes
// out (Answered; the Gateway reads the id off each reply it sends). Its
// connection closing (PeerGone) frees what it had open, and so does age
// (Expire): a request that is never answered must not hold its key's slot
// for good. Callers the limit does not hold (admins) are not recorded.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "control/refusal_log.h"
#include "protocol/base/status.h"

namespace gpool::control {

class InflightRequests {
 public:
  // Requests older than `max_age_ms` are taken for never answered.
  explicit InflightRequests(uint32_t max_per_key, int64_t max_age_ms = 10 * 60 * 1000)
      : max_per_key_(max_per_key), max_age_ms_(max_age_ms) {}

  // Opens request `id` of `key` from `peer`, or ResourceExhausted naming
  // the limit when `key` has max_per_key open.
  Status Admit(const std::string& key, const std::string& peer, uint64_t id, int64_t now_ms);
  // A reply to `peer`'s request `id` went out (one of them, if the peer
  // reused the id).
  void Answered(const std::string& peer, uint64_t id);
  // `peer`'s connection closed: nothing it asked can be answered.
  void PeerGone(const std::string& peer);
  // Forgets requests older than max_age_ms. Every loop turn.
  void Expire(int64_t now_ms);

  uint32_t held(const std::string& key) const;
  size_t open() const { return open_; }
  uint32_t limit() const { return max_per_key_; }

 private:
  struct Open {
    std::string key;
    int64_t since_ms = 0;
    uint32_t count = 0;  // a peer may (wrongly) reuse an id; each use is counted
  };
  using OpenMap = std::map<std::pair<std::string, uint64_t>, Open>;
  void Drop(OpenMap::iterator it, uint32_t count);

  uint32_t max_per_key_;
  int64_t max_age_ms_;
  OpenMap open_by_request_;  // by (peer, request id)
  std::map<std::string, uint32_t> held_;  // by key
  size_t open_ = 0;
  int64_t next_expiry_check_ms_ = 0;
  RefusalLog refusals_;
};

}  // namespace gpool::control
