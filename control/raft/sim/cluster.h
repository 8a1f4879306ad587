// SimCluster: a deterministic simulation of a Raft cluster in one process.
//
// N voters (plus one spare node that membership changes may add) run RawNodes
// against a SimNetwork that drops, delays, duplicates, reorders and
// partitions messages. Each step is one random event from a single seeded
// Rng: deliver a message, handle one node's Ready, tick the clock (all nodes
// or one, to model clock drift), a client proposal or ReadIndex, a crash or
// restart, a partition or heal, a compaction, a membership change or a
// leader transfer. A node's durable state is its MemoryLog, written only when
// it handles a Ready (before its messages are sent); a crash drops the
// RawNode and everything it had not persisted.
//
// After every step the Checker verifies the safety properties (checker.h).
// Run() then heals the network, restarts every node and requires liveness:
// within a bounded number of ticks a stable leader exists and every proposal
// made in the healed phase commits and is applied by every live voter.
//
// A failure is a non-OK Status; Report() adds the replay command, the last
// events and each node's state. Thread-safety: none.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "control/raft/raw_node.h"
#include "control/raft/sim/checker.h"
#include "control/raft/sim/memory_log.h"
#include "control/raft/sim/network.h"
#include "control/raft/sim/rng.h"

namespace gpool::raft::sim {

struct SimOptions {
  uint64_t seed = 1;
  int nodes = 3;            // initial voters; ids 1..nodes, spare node nodes+1
  int steps = 3000;         // chaos steps before the liveness phase
  int liveness_ticks = 300; // bound for a leader and the healed-phase commits
  int healed_proposals = 5;
  bool keep_full_trace = false;  // keep every event (for replays), not just the tail
  // Seeds (per mille) with a rogue peer that injects forged and replayed
  // messages during the chaos phase (rogue.cc); 0 = never, 1000 = always.
  uint32_t rogue_per_mille = 250;
};

struct SimStats {
  uint64_t ticks = 0;
  uint64_t delivered = 0;
  uint64_t proposals_accepted = 0;
  uint64_t max_commit = 0;
  uint64_t leaders = 0;
  uint64_t crashes = 0;
  uint64_t snapshots_installed = 0;
  uint64_t conf_changes = 0;
  uint64_t transfers = 0;
  uint64_t reads = 0;
  uint64_t sent = 0;
  uint64_t dropped = 0;          // by faults or partitions
  uint64_t leader_steps = 0;     // chaos steps during which some node was leader
  uint64_t forged = 0;           // rogue messages stepped into nodes
  uint64_t replayed = 0;         // old honest messages delivered again by the rogue
  uint64_t refused = 0;          // honest messages beyond a receiver's term bound (a forged term lift)
};

class SimCluster {
 public:
  explicit SimCluster(SimOptions options);
  ~SimCluster();
  SimCluster(const SimCluster&) = delete;
  SimCluster& operator=(const SimCluster&) = delete;

  Status Run();
  // Replay command, trace tail and node states; for a failed Run().
  std::string Report(const Status& failure, size_t trace_events = 40) const;
  const SimStats& stats() const { return stats_; }

 private:
  struct Node;
  struct Event;

  Status ChaosStep();
  Status LivenessPhase();
  Status CheckAll();

  // Events.
  Status DeliverOne();
  // Steps an honest (delivered) message into `to`; a failure is a finding,
  // except a bounds refusal in a seed with a rogue (StepHonest in cluster.cc).
  Status StepHonest(Node& to, const Message& m);
  Status HandleReady(Node& n);
  void TickNode(Node& n);
  Status TickAll();
  Status Propose(Node& n, const std::string& data, uint64_t* index);
  void Crash(Node& n);
  Status Restart(Node& n);
  void Repartition();
  void Compact(Node& n);
  void ChangeMembership();
  void TransferLeadership();
  void IssueRead(Node& n);
  // The rogue peer (rogue.cc): one forged or replayed message.
  Status Forge();
  Status ForgeBeyondBounds(Node& target);
  Status ForgePreVote(Node& target);
  Status ForgeFromOutsider(Node& target);
  Status Replay();
  void Remember(const Message& m);
  // Delivers messages and handles Readys until nothing moves (healed phase).
  Status Settle();

  Node* RandomNode();
  Node* RandomLiveNode();
  Node* Leader();
  void Trace(char kind, uint64_t node, uint64_t a = 0, uint64_t b = 0, const Message* m = nullptr);
  std::string FormatEvent(const Event& e) const;

  SimOptions opts_;
  Rng rng_;
  SimNetwork net_;
  Checker checker_;
  std::vector<std::unique_ptr<Node>> nodes_;
  uint64_t now_ = 0;
  uint64_t step_ = 0;
  uint64_t next_request_ = 0;
  SimStats stats_;
  std::vector<Event> trace_;  // ring buffer unless keep_full_trace
  size_t trace_next_ = 0;
  bool rogue_ = false;
  std::vector<Message> delivered_;  // rogue: a sample of delivered messages to replay much later
};

// One simulated replica (defined here for rogue.cc as well as cluster.cc).
struct SimCluster::Node {
  uint64_t id = 0;
  Config config;
  std::unique_ptr<RawNode> raw;  // null while crashed
  MemoryLog durable;
  uint64_t applied = 0;  // the state machine: applied index and hash chain
  uint64_t chain = 0;
  bool up() const { return raw != nullptr; }
};

}  // namespace gpool::raft::sim
