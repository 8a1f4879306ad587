#include "control/gateway/exec_streams.h"

#include <spdlog/spdlog.h>

namespace gpool::control {

Status ExecStreams::Reserve(const std::string& owner) {
  uint32_t& held = held_[owner];
  if (held >= max_per_user_) {
    spdlog::info("exec refused owner={} open={} limit={}", owner, held, max_per_user_);
    return Status::ResourceExhausted(owner + " has " + std::to_string(held) +
                                     " exec streams open, the most one user may (--max-exec-streams-per-user " +
                                     std::to_string(max_per_user_) + "); end one first");
  }
  ++held;
  return Status::Ok();
}

void ExecStreams::Release(const std::string& owner) {
  auto it = held_.find(owner);
  if (it == held_.end()) return;
  if (it->second <= 1) {
    held_.erase(it);
  } else {
    --it->second;
  }
}

void ExecStreams::Started(const std::string& owner, const std::string& node, uint64_t exec_id, uint32_t lease_ms,
                          int64_t now_ms) {
  auto [it, inserted] = streams_.try_emplace({node, exec_id});
  if (!inserted) {
    // A retried start: the stream already holds its slot. (Another owner's
    // stale entry under a reused id is replaced: that one is gone.)
    if (it->second.owner == owner) {
      Release(owner);
      it->second.deadline_ms = now_ms + lease_ms + grace_ms_;
      return;
    }
    Release(it->second.owner);
  }
  it->second = Stream{owner, lease_ms, now_ms + lease_ms + grace_ms_};
}

void ExecStreams::Polled(const std::string& node, uint64_t exec_id, int64_t now_ms) {
  auto it = streams_.find({node, exec_id});
  if (it != streams_.end()) it->second.deadline_ms = now_ms + it->second.lease_ms + grace_ms_;
}

void ExecStreams::Ended(const std::string& node, uint64_t exec_id) {
  auto it = streams_.find({node, exec_id});
  if (it != streams_.end()) Drop(it);
}

void ExecStreams::Expire(int64_t now_ms) {
  // A scan at most every 250 ms: leases are seconds long, and the loop may
  // turn for every message.
  if (now_ms < next_expiry_check_ms_) return;
  next_expiry_check_ms_ = now_ms + 250;
  for (auto it = streams_.begin(); it != streams_.end();) {
    if (it->second.deadline_ms > now_ms) {
      ++it;
      continue;
    }
    spdlog::info("exec stream lease ran out node={} exec_id={} owner={}", it->first.first, it->first.second,
                 it->second.owner);
    auto next = std::next(it);
    Drop(it);
    it = next;
  }
}

void ExecStreams::Clear() {
  streams_.clear();
  held_.clear();
}

uint32_t ExecStreams::held(const std::string& owner) const {
  auto it = held_.find(owner);
  return it == held_.end() ? 0 : it->second;
}

void ExecStreams::Drop(std::map<std::pair<std::string, uint64_t>, Stream>::iterator it) {
  Release(it->second.owner);
  streams_.erase(it);
}

}  // namespace gpool::control
