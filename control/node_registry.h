// NodeRegistry: the worker channel. Registers nodes, tracks heartbeats,
// marks silent nodes NotReady, and turns worker reports into commands.
//
// A node's liveness is a countdown reset by any frame from it. A node that
// has been silent for `node_timeout_ms` (or never reconnected after a
// coordinator restart) is proposed NotReady; its next heartbeat proposes it
// Ready again. Task events are acknowledged to the worker only after the
// command they became is committed, so a crash in between makes the worker
// resend them rather than lose them.
//
// Only the serving leader (Proposer::leading()) talks to workers: any other
// replica answers their requests with ErrorReply NotLeader, which makes the
// worker try its next coordinator endpoint. Connections belong to one
// leadership: Reset() forgets them when this replica starts or stops
// leading, and a new leader gives every node a full timeout window to find
// it before proposing anything NotReady.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "control/ports.h"
#include "protocol/base/clock.h"
#include "protocol/envelope.h"

namespace gpool::control {

class Dispatcher;

struct NodeRegistryOptions {
  uint32_t heartbeat_interval_ms = 1000;
  int64_t node_timeout_ms = 10'000;
  std::string token;  // empty: no authentication
  std::string coordinator_id = "coordinator";
  wire::DecodeLimits limits;
  const Clock* clock = &SystemClock::Get();
};

class NodeRegistry {
 public:
  NodeRegistry(const NodeRegistryOptions& options, const state::ClusterState& state, Outbox& outbox,
               Proposer& proposer, int64_t start_ms);
  void set_dispatcher(Dispatcher* dispatcher) { dispatcher_ = dispatcher; }

  void OnFrame(const std::string& peer, std::string_view bytes, int64_t now_ms);
  void Tick(int64_t now_ms);
  // Forgets every connection and restarts the liveness window at now_ms.
  void Reset(int64_t now_ms);

  // The connection a node is reachable on, or null when it is not connected.
  const std::string* PeerFor(const std::string& node) const;
  // Wall time of the last frame from the node (heartbeats are not committed,
  // so the state machine's last_seen only moves on state changes); 0 if none.
  int64_t LastSeenWallMs(const std::string& node) const;
  // GPU memory the task used at its worker's last heartbeat; -1 unknown
  // (not running, or its node cannot measure it). Soft state: only the
  // replica the worker talks to has it.
  int64_t GpuMemoryUsed(const TaskId& task) const;
  size_t connected() const { return links_.size(); }

 private:
  struct Link {
    std::string peer;
    int64_t last_seen_ms = 0;  // monotonic
    int64_t last_seen_wall_ms = 0;
    bool not_ready_proposed = false;
    bool ready_proposed = false;  // a Ready proposal for it is in flight
    // From the last heartbeat, sorted by task. A flat vector, not a map: it
    // is replaced whole on every heartbeat, and at 24 bytes a task rather
    // than a map node's 64 it keeps the registry small at 100,000 tasks.
    std::vector<TaskUsage> gpu_memory_used;
    std::set<TaskId> warned_over_share;          // told once that it uses more than its share
  };

  void OnRegister(const std::string& peer, const Header& header, RegisterNode msg, int64_t now_ms);
  void OnHeartbeat(const std::string& peer, const Header& header, const Heartbeat& msg, int64_t now_ms);
  void OnTaskEvent(const std::string& peer, const Header& header, TaskEvent msg, int64_t now_ms);
  void ProposeNotReady(const std::string& node);
  // Makes sure Tick looks at the link once its timeout can have run out.
  void Watch(const Link& link);
  void RecordUsage(Link& link, const Heartbeat& msg);
  static const TaskUsage* FindUsage(const Link& link, const TaskId& task);
  // The node this peer registered as, if it matches `claimed`.
  Link* Authenticate(const std::string& peer, const std::string& claimed);
  void Reply(const std::string& peer, std::string frame) { outbox_.ToWorker(peer, std::move(frame)); }

  NodeRegistryOptions options_;
  const state::ClusterState& state_;
  Outbox& outbox_;
  Proposer& proposer_;
  Dispatcher* dispatcher_ = nullptr;
  int64_t start_ms_;
  // Tick scans the links only from this time on: no link can have been
  // silent for the timeout before it (last_seen only moves forward), so the
  // loop does not walk a thousand links on every turn.
  int64_t next_silence_check_ms_ = 0;
  int64_t next_orphan_scan_ms_ = 0;  // when to look for nodes that never reconnected
  std::map<std::string, Link> links_;          // node -> link
  std::map<std::string, std::string> by_peer_;  // peer -> node
};

}  // namespace gpool::control
