#include "control/gateway/inflight_requests.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace gpool::control {

Status InflightRequests::Admit(const std::string& key, const std::string& peer, uint64_t id, int64_t now_ms) {
  uint32_t& held = held_[key];
  if (held >= max_per_key_) {
    if (uint64_t unlogged = 0; refusals_.Take(now_ms, &unlogged)) {
      spdlog::info("request refused key={} in_flight={} limit={} refused_unlogged={}", key, held, max_per_key_,
                   unlogged);
    }
    return Status::ResourceExhausted("key " + key + " has " + std::to_string(held) +
                                     " requests waiting for an answer, the most one key may "
                                     "(--max-inflight-per-key " +
                                     std::to_string(max_per_key_) + "); wait for some to be answered");
  }
  ++held;
  ++open_;
  Open& open = open_by_request_[{peer, id}];
  if (open.count == 0) {
    open.key = key;
    open.since_ms = now_ms;
  }
  ++open.count;
  return Status::Ok();
}

void InflightRequests::Answered(const std::string& peer, uint64_t id) {
  auto it = open_by_request_.find({peer, id});
  if (it != open_by_request_.end()) Drop(it, 1);
}

void InflightRequests::PeerGone(const std::string& peer) {
  for (auto it = open_by_request_.lower_bound({peer, 0}); it != open_by_request_.end() && it->first.first == peer;) {
    auto next = std::next(it);
    Drop(it, it->second.count);
    it = next;
  }
}

void InflightRequests::Expire(int64_t now_ms) {
  // A scan at most once a second: ages of minutes need no finer clock.
  if (now_ms < next_expiry_check_ms_) return;
  next_expiry_check_ms_ = now_ms + 1000;
  for (auto it = open_by_request_.begin(); it != open_by_request_.end();) {
    auto next = std::next(it);
    if (now_ms - it->second.since_ms >= max_age_ms_) {
      spdlog::warn("request never answered; its in-flight slot is freed key={} request_id={} age_ms={}",
                   it->second.key, it->first.second, now_ms - it->second.since_ms);
      Drop(it, it->second.count);
    }
    it = next;
  }
}

uint32_t InflightRequests::held(const std::string& key) const {
  auto it = held_.find(key);
  return it == held_.end() ? 0 : it->second;
}

void InflightRequests::Drop(OpenMap::iterator it, uint32_t count) {
  auto held = held_.find(it->second.key);
  if (held != held_.end()) {
    held->second = held->second > count ? held->second - count : 0;
    if (held->second == 0) held_.erase(held);
  }
  open_ -= std::min<size_t>(open_, count);
  it->second.count -= std::min(it->second.count, count);
  if (it->second.count == 0) open_by_request_.erase(it);
}

}  // namespace gpool::control
