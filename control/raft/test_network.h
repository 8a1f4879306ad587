// TestNetwork: a synchronous in-process cluster for the Raft unit tests, in
// the spirit of etcd's raft_test.go network. Each node is a RawNode with a
// MemoryLog for its durable state and a list of applied commands as its
// state machine. Flush() runs every node's Ready (persist, send, apply,
// Advance) and delivers messages breadth-first until the cluster is quiet;
// time only moves when a test ticks. Tests cut links, isolate nodes or drop
// message types to build the scenario they need.
//
// Thread-safety: none. Test-only, header-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "control/raft/raw_node.h"
#include "control/raft/sim/memory_log.h"
#include "protocol/model/users.h"

namespace gpool::raft::testing {

// The applied state of one node: the normal commands in order.
struct AppliedState {
  std::vector<std::string> commands;
  uint64_t applied = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("commands", commands);
    v.Required("applied", applied);
  }
};

// Knobs of a TestNetwork's nodes (Config fields).
struct TestNetworkOptions {
  int election_tick = 10;
  int heartbeat_tick = 1;
  bool pre_vote = true;
  bool check_quorum = true;
  uint64_t max_msg_entries = 64;
  uint64_t max_msg_bytes = 1 << 20;
  uint64_t max_inflight = 256;
  uint64_t max_uncommitted_bytes = 64 << 20;
  uint64_t max_committed_per_ready = 0;
};


class TestNetwork {
 public:
  using Options = TestNetworkOptions;

  // Bootstraps a cluster whose voters are `ids`.
  explicit TestNetwork(std::vector<uint64_t> ids, Options options = Options()) : options_(options), voters_(ids) {
    for (uint64_t id : ids) Start(id, ids, {});
  }

  // A fresh node outside the configuration (to be added later).
  void AddIdleNode(uint64_t id) { Start(id, {}, {}); }

  Config ConfigFor(uint64_t id, std::vector<uint64_t> peers) const {
    Config c;
    c.id = id;
    c.peers = std::move(peers);
    c.election_tick = options_.election_tick;
    c.heartbeat_tick = options_.heartbeat_tick;
    c.pre_vote = options_.pre_vote;
    c.check_quorum = options_.check_quorum;
    c.max_msg_entries = options_.max_msg_entries;
    c.max_msg_bytes = options_.max_msg_bytes;
    c.max_inflight = options_.max_inflight;
    c.max_uncommitted_bytes = options_.max_uncommitted_bytes;
    c.max_committed_per_ready = options_.max_committed_per_ready;
    c.seed = 42;
    return c;
  }

  RawNode& node(uint64_t id) { return *nodes_.at(id).raw; }
  NodeInfo info(uint64_t id) { return nodes_.at(id).raw->info(); }
  const sim::MemoryLog& durable(uint64_t id) { return nodes_.at(id).durable; }
  const AppliedState& state(uint64_t id) { return nodes_.at(id).state; }
  // The most committed entries one Ready of node `id` has handed over.
  size_t largest_apply(uint64_t id) { return nodes_.at(id).largest_apply; }
  std::vector<ReadState>& reads(uint64_t id) { return nodes_.at(id).reads; }
  std::vector<uint64_t> ids() const {
    std::vector<uint64_t> out;
    for (const auto& [id, n] : nodes_) out.push_back(id);
    return out;
  }

  // Crash loses everything not persisted; Restart reloads the durable state.
  void Crash(uint64_t id) {
    nodes_.at(id).raw.reset();
    down_.insert(id);
  }
  void Restart(uint64_t id) {
    Node& n = nodes_.at(id);
    auto raw = RawNode::Restart(ConfigFor(id, n.peers), n.durable.ToInitialState());
    ASSERT_TRUE(raw.ok()) << raw.status().ToString();
    n.raw = std::move(raw).value();
    n.state = RestoreState(n.durable.snapshot());
    down_.erase(id);
    Flush();  // re-apply the committed entries after the snapshot
  }

  // Restart with an empty data dir: the same id, its log and votes gone.
  void RestartEmpty(uint64_t id) {
    Node& n = nodes_.at(id);
    n.durable = sim::MemoryLog();
    n.state = AppliedState{};
    n.raw.reset();
    Start(id, n.peers, {});
    down_.erase(id);
  }

  // Links. A cut or isolated link drops messages in both directions.
  void Cut(uint64_t a, uint64_t b) {
    cut_.insert({a, b});
    cut_.insert({b, a});
  }
  void Isolate(uint64_t id) {
    for (const auto& [other, n] : nodes_) {
      if (other != id) Cut(id, other);
    }
  }
  void Heal() {
    cut_.clear();
    drop_if_ = nullptr;
  }
  // Drops every message the predicate accepts (until Heal()).
  void DropIf(std::function<bool(const Message&)> pred) { drop_if_ = std::move(pred); }

  // Messages delivered so far, for tests that count round trips.
  const std::vector<Message>& delivered() const { return delivered_; }
  void ClearDelivered() { delivered_.clear(); }

  // Runs Readys and delivers messages until nothing moves.
  void Flush() {
    for (int round = 0; round < 100000; ++round) {
      bool moved = false;
      for (auto& [id, n] : nodes_) {
        if (n.raw == nullptr) continue;
        while (n.raw->HasReady()) {
          HandleReady(id, n);
          moved = true;
        }
      }
      if (queue_.empty()) {
        if (!moved) return;
        continue;
      }
      std::deque<Message> batch;
      batch.swap(queue_);
      for (auto& m : batch) Deliver(m);
    }
    FAIL() << "TestNetwork::Flush did not settle";
  }

  // Queues a message as if a node had sent it (for hand-made scenarios).
  void Inject(Message m) { queue_.push_back(std::move(m)); }

  void Tick(uint64_t id, int n = 1) {
    for (int i = 0; i < n; ++i) {
      if (nodes_.at(id).raw) nodes_.at(id).raw->Tick();
      Flush();
    }
  }
  void TickAll(int n = 1) {
    for (int i = 0; i < n; ++i) {
      for (auto& [id, node] : nodes_) {
        if (node.raw) node.raw->Tick();
      }
      Flush();
    }
  }

  void Campaign(uint64_t id) {
    ASSERT_TRUE(node(id).Campaign().ok());
    Flush();
  }

  Result<uint64_t> Propose(uint64_t id, const std::string& command) {
    auto r = node(id).Propose(command);
    Flush();
    return r;
  }

  // The node that is leader in the highest term, or 0.
  uint64_t Leader() {
    uint64_t best = 0, best_term = 0;
    for (auto& [id, n] : nodes_) {
      if (n.raw == nullptr) continue;
      NodeInfo i = n.raw->info();
      if (i.role == Role::kLeader && i.term >= best_term) {
        best = id;
        best_term = i.term;
      }
    }
    return best;
  }

  // Compacts node `id` at its applied index with its current state.
  Result<Snapshot> Compact(uint64_t id) {
    Node& n = nodes_.at(id);
    const uint64_t applied = n.raw->info().applied;
    AppliedState s = n.state;
    s.applied = applied;
    auto snap = n.raw->Compact(applied, wire::PackToString(s));
    if (snap.ok()) n.durable.SaveSnapshot(*snap);
    return snap;
  }

 private:
  struct Node {
    std::unique_ptr<RawNode> raw;
    std::vector<uint64_t> peers;
    sim::MemoryLog durable;
    AppliedState state;
    std::vector<ReadState> reads;
    size_t largest_apply = 0;
  };

  void Start(uint64_t id, std::vector<uint64_t> peers, InitialState init) {
    Node& n = nodes_[id];
    n.peers = std::move(peers);
    auto raw = RawNode::Restart(ConfigFor(id, n.peers), std::move(init));
    ASSERT_TRUE(raw.ok()) << raw.status().ToString();
    n.raw = std::move(raw).value();
  }

  static AppliedState RestoreState(const Snapshot& s) {
    if (s.empty()) return {};
    auto state = wire::UnpackFromString<AppliedState>(s.data);
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    return state.ok() ? *state : AppliedState{};
  }

  void HandleReady(uint64_t id, Node& n) {
    Ready rd = n.raw->GetReady();
    n.durable.Persist(rd);
    for (auto& m : rd.messages) queue_.push_back(std::move(m));
    if (rd.snapshot.has_value()) n.state = RestoreState(*rd.snapshot);
    for (const auto& e : rd.committed_entries) {
      EXPECT_EQ(e.index, n.state.applied + 1) << "node " << id << " applied out of order";
      n.state.applied = e.index;
      if (TypeOf(e) == EntryType::kNormal) n.state.commands.emplace_back(NormalPayload(e));
    }
    n.largest_apply = std::max(n.largest_apply, rd.committed_entries.size());
    for (auto& r : rd.read_states) {
      // Every test checks it: a read is released only once its index is applied.
      EXPECT_LE(r.index, n.state.applied) << "node " << id << " released read " << r.context << " early";
      n.reads.push_back(std::move(r));
    }
    n.raw->Advance(rd);
  }

  void Deliver(const Message& m) {
    if (cut_.count({m.from, m.to}) || (drop_if_ && drop_if_(m))) return;
    auto it = nodes_.find(m.to);
    if (it == nodes_.end() || it->second.raw == nullptr) return;
    delivered_.push_back(m);
    Status s = it->second.raw->Step(m);
    EXPECT_TRUE(s.ok()) << "node " << m.to << " rejected " << m.DebugString() << ": " << s.ToString();
  }

  Options options_;
  std::vector<uint64_t> voters_;
  std::map<uint64_t, Node> nodes_;
  std::set<uint64_t> down_;
  std::set<std::pair<uint64_t, uint64_t>> cut_;
  std::function<bool(const Message&)> drop_if_;
  std::deque<Message> queue_;
  std::vector<Message> delivered_;
};

}  // namespace gpool::raft::testing
