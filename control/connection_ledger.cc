#include "control/connection_ledger.h"

#include <spdlog/spdlog.h>

namespace gpool::control {
namespace {

// Closed peers remembered: far more than a loop turn's drain can hold queued.
constexpr size_t kClosedPeersKept = 8192;

}  // namespace

void ConnectionLedger::Opened(int fd) {
  if (auto it = connections_.find(fd); it != connections_.end()) {
    Uncount(it->second);
    if (!it->second.peer.empty()) RememberClosed(it->second.peer);
    connections_.erase(it);
  }
  connections_.emplace(fd, Connection{});
}

std::optional<std::string> ConnectionLedger::Closed(int fd) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return std::nullopt;
  Uncount(it->second);
  std::optional<std::string> peer;
  if (!it->second.peer.empty()) {
    peer = it->second.peer;
    RememberClosed(*peer);
  }
  connections_.erase(it);
  return peer;
}

Status ConnectionLedger::Admit(int fd, const std::string& peer, const std::string& key,
                               const std::function<bool()>& exempt, int64_t now_ms) {
  auto it = connections_.find(fd);
  // Not tracked (no monitor event for it), or queued before its close.
  if (it == connections_.end() || key.empty() || closed_peers_.contains(peer)) return Status::Ok();
  Connection& connection = it->second;
  if (connection.peer.empty()) connection.peer = peer;
  // Another peer on the same fd: a message queued before an earlier
  // connection's close whose peer never spoke before. Not counted.
  if (connection.peer != peer) return Status::Ok();
  if (connection.counted || connection.exempt) return Status::Ok();
  if (exempt()) {
    connection.exempt = true;
    return Status::Ok();
  }
  uint32_t& held = held_[key];
  if (held >= max_per_key_) {
    if (uint64_t unlogged = 0; refusals_.Take(now_ms, &unlogged)) {
      spdlog::warn("client connection refused key={} connections={} limit={} refused_unlogged={}", key, held,
                   max_per_key_, unlogged);
    }
    return Status::ResourceExhausted("key " + key + " has " + std::to_string(held) +
                                     " connections open to the coordinator, the most one key may "
                                     "(--max-connections-per-key " +
                                     std::to_string(max_per_key_) + "); close some first");
  }
  ++held;
  ++counted_;
  connection.counted = true;
  connection.key = key;
  return Status::Ok();
}

uint32_t ConnectionLedger::held(const std::string& key) const {
  auto it = held_.find(key);
  return it == held_.end() ? 0 : it->second;
}

void ConnectionLedger::Uncount(Connection& connection) {
  if (!connection.counted) return;
  connection.counted = false;
  --counted_;
  auto it = held_.find(connection.key);
  if (it == held_.end()) return;
  if (--it->second == 0) held_.erase(it);
}

void ConnectionLedger::RememberClosed(const std::string& peer) {
  if (!closed_peers_.insert(peer).second) return;
  closed_order_.push_back(peer);
  if (closed_order_.size() > kClosedPeersKept) {
    closed_peers_.erase(closed_order_.front());
    closed_order_.pop_front();
  }
}

}  // namespace gpool::control
