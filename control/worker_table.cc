#include "control/worker_table.h"
#include "protocol/health.h"
#include "protocol/messages_worker.h"

#include <algorithm>

namespace gpool::control {

const WorkerConnection* WorkerTable::Find(const std::string& node) const {
  auto it = by_node_.find(node);
  return it == by_node_.end() ? nullptr : &it->second;
}

const std::string* WorkerTable::PeerFor(const std::string& node) const {
  const WorkerConnection* connection = Find(node);
  return connection == nullptr ? nullptr : &connection->peer;
}

const std::string* WorkerTable::NodeAt(const std::string& peer) const {
  auto it = by_peer_.find(peer);
  return it == by_peer_.end() ? nullptr : &it->second;
}

int64_t WorkerTable::LastSeenWallMs(const std::string& node) const {
  const WorkerConnection* connection = Find(node);
  return connection == nullptr ? 0 : connection->last_seen_wall_ms;
}

int64_t WorkerTable::GpuMemoryUsed(const std::string& node, const TaskId& task) const {
  const WorkerConnection* connection = Find(node);
  if (connection == nullptr) return -1;
  const auto& usage = connection->usage;
  auto it = std::lower_bound(usage.begin(), usage.end(), task,
                             [](const TaskUsage& u, const TaskId& id) { return u.task < id; });
  return it != usage.end() && it->task == task ? static_cast<int64_t>(it->gpu_memory_used_mib) : -1;
}

WorkerConnection& WorkerTable::Connect(const std::string& node, const std::string& peer, int64_t now_ms,
                                       int64_t wall_ms) {
  auto old = by_node_.find(node);
  if (old != by_node_.end() && old->second.peer != peer) by_peer_.erase(old->second.peer);
  // A peer that registered as another node before now speaks for this one.
  if (auto other = by_peer_.find(peer); other != by_peer_.end() && other->second != node) {
    by_node_.erase(other->second);
  }
  WorkerConnection& connection = by_node_[node];
  connection = WorkerConnection{peer, now_ms, wall_ms, {}};
  by_peer_[peer] = node;
  return connection;
}

void WorkerTable::Touch(const std::string& node, int64_t now_ms, int64_t wall_ms) {
  auto it = by_node_.find(node);
  if (it == by_node_.end()) return;
  it->second.last_seen_ms = now_ms;
  it->second.last_seen_wall_ms = wall_ms;
}

void WorkerTable::RecordGpus(const std::string& node, const std::vector<GpuUtilization>& gpus) {
  auto it = by_node_.find(node);
  if (it == by_node_.end()) return;
  // More entries than any node has GPUs is a broken or hostile worker: keep
  // none rather than let it fill the table.
  constexpr size_t kMaxGpus = 1024;
  it->second.gpus = gpus.size() <= kMaxGpus ? gpus : std::vector<GpuUtilization>{};
}

void WorkerTable::RecordUsage(const std::string& node, const std::vector<TaskUsage>& reported) {
  auto it = by_node_.find(node);
  if (it == by_node_.end()) return;
  auto& usage = it->second.usage;
  const size_t count = std::min(reported.size(), kMaxUsage);
  usage.assign(reported.begin(), reported.begin() + static_cast<ptrdiff_t>(count));
  // A task reported twice keeps its last value, as a map assignment would.
  std::stable_sort(usage.begin(), usage.end(), [](const TaskUsage& a, const TaskUsage& b) { return a.task < b.task; });
  auto last = std::unique(usage.rbegin(), usage.rend(),
                          [](const TaskUsage& a, const TaskUsage& b) { return a.task == b.task; });
  usage.erase(usage.begin(), last.base());
}

void WorkerTable::Clear() {
  by_node_.clear();
  by_peer_.clear();
}

void WorkerTable::RecordHealth(const std::string& node, uint64_t version, const std::vector<HealthCondition>& health,
                               uint64_t rounds) {
  auto it = by_node_.find(node);
  if (it == by_node_.end()) return;
  WorkerConnection& connection = it->second;
  if (version > connection.health_version) {
    connection.health_version = version;
    const bool was_clear = connection.health.empty();
    connection.health = health;
    if (!health.empty()) connection.clear_since_rounds = 0;
    if (health.empty() && !was_clear) connection.clear_since_rounds = rounds;
  }
  connection.health_rounds = std::max(connection.health_rounds, rounds);
}

}  // namespace gpool::control
