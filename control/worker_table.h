// WorkerTable: the worker connections of this leadership, in one owned table,
// and WorkerEvents, what the NodeRegistry tells the components that act on
// workers.
//
// The NodeRegistry is the table's only writer: it connects a node when its
// registration commits, touches it on every frame and records its usage on
// every heartbeat, and clears the table when leadership changes. The
// Dispatcher, the WorkerRelay and the Gateway only read it (const&), so who may
// change a connection is visible in the types. Connections are soft state:
// only the replica a worker talks to has them, and none of it is committed.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/envelope.h"
#include "protocol/health.h"
#include "protocol/messages_worker.h"

namespace gpool::control {

struct WorkerConnection {
  std::string peer;               // the ROUTER identity the worker registered on
  int64_t last_seen_ms = 0;       // monotonic, last frame of any kind
  int64_t last_seen_wall_ms = 0;  // the same on the wall clock, for users
  // GPU memory per task at the last heartbeat, sorted by task. A flat vector,
  // not a map: it is replaced whole on every heartbeat, and at 24 bytes a
  // task rather than a map node's 64 it stays small at 100,000 tasks.
  std::vector<TaskUsage> usage;
  // Health as the worker last reported it (heartbeats carry the list only
  // when it changed), its completed check rounds, and the round count at
  // which its list was last seen empty after not being so (0: never clear
  // since it connected), so the health policy can count clear rounds.
  std::vector<HealthCondition> health;
  uint64_t health_version = 0;
  uint64_t health_rounds = 0;
  uint64_t clear_since_rounds = 0;
  // Each measured GPU's utilisation at the last heartbeat that carried it.
  std::vector<GpuUtilization> gpus;
};

class WorkerTable {
 public:
  // Readers.
  const WorkerConnection* Find(const std::string& node) const;
  // The connection a node is reachable on, or null when it is not connected.
  const std::string* PeerFor(const std::string& node) const;
  // The node that registered on `peer`, or null.
  const std::string* NodeAt(const std::string& peer) const;
  // Wall time of the node's last frame (heartbeats are not committed, so the
  // state machine's last_seen only moves on state changes); 0 if none.
  int64_t LastSeenWallMs(const std::string& node) const;
  // GPU memory `task` on `node` used at the node's last heartbeat; -1 when
  // unknown (not running there, or the node cannot measure it).
  int64_t GpuMemoryUsed(const std::string& node, const TaskId& task) const;
  size_t size() const { return by_node_.size(); }

  // Writers (the NodeRegistry).
  // `node` is now reachable on `peer`; a connection it had before is
  // replaced, usage included.
  WorkerConnection& Connect(const std::string& node, const std::string& peer, int64_t now_ms, int64_t wall_ms);
  // A frame arrived from `node`.
  void Touch(const std::string& node, int64_t now_ms, int64_t wall_ms);
  // Replaces the node's usage with a heartbeat's (at most kMaxUsage entries;
  // a task reported twice keeps its last value).
  void RecordUsage(const std::string& node, const std::vector<TaskUsage>& usage);
  void RecordGpus(const std::string& node, const std::vector<GpuUtilization>& gpus);
  // Records a heartbeat's (or a registration's) health: the list when
  // `version` is newer than the last one recorded, and the rounds.
  void RecordHealth(const std::string& node, uint64_t version, const std::vector<HealthCondition>& health,
                    uint64_t rounds);
  void Clear();

  static constexpr size_t kMaxUsage = 100'000;  // a worker tracks at most this many tasks

 private:
  std::map<std::string, WorkerConnection> by_node_;
  std::map<std::string, std::string> by_peer_;  // peer -> node
};

// What the NodeRegistry raises. Listeners are subscribed in Coordinator::Open.
class WorkerEvents {
 public:
  virtual ~WorkerEvents() = default;
  // `node` (re)registered on a new connection: whatever was sent to its old
  // one may be lost.
  virtual void NodeConnected(const std::string& node) { (void)node; }
  // A heartbeat from `node` on its registered connection, naming the
  // operator labels its worker holds (Heartbeat.labels_digest; 0: none taken).
  virtual void NodeHeartbeat(const std::string& node, uint64_t labels_digest, int64_t now_ms) {
    (void)node;
    (void)labels_digest;
    (void)now_ms;
  }
  // A task event from a worker committed (it started, exited or failed).
  virtual void TaskSettled(const TaskId& task) { (void)task; }
  // A reply (Ack, ErrorReply, FetchLogReply) from the worker registered as
  // `node` to a command the coordinator sent; the listener that issued its
  // request id takes it.
  virtual void WorkerReplied(const std::string& node, const Envelope& reply) {
    (void)node;
    (void)reply;
  }
};

}  // namespace gpool::control
