// Test harness for RaftLog: replicas over real PeerTransports on 127.0.0.1
// and MemoryStore-backed LogStores, in one process, driven turn by turn the
// way the coordinator's loop drives one. Time is a FakeClock, so elections
// depend on turns, not on how fast the machine is; sockets still carry every
// message. Test-only, header-only.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "control/replication/raft_log.h"
#include "protocol/base/testing/fake_clock.h"
#include "storage/testing/memory_store.h"

namespace gpool::replication::testing {

// A toy state machine: the list of commands applied, and the index of the
// last one. Its snapshot is the list joined by newlines.
struct Machine {
  uint64_t applied = 0;
  std::vector<std::string> commands;

  std::string Snapshot() const {
    std::string out;
    for (const auto& c : commands) out += c + "\n";
    return out;
  }
  void Restore(const log::StateSnapshot& s) {
    commands.clear();
    size_t start = 0;
    for (size_t nl = s.data.find('\n'); nl != std::string::npos; nl = s.data.find('\n', start)) {
      commands.push_back(s.data.substr(start, nl - start));
      start = nl + 1;
    }
    applied = s.index;
  }
  void Take(log::Committed c) {
    const uint64_t at = c.snapshot ? c.snapshot->index : 0;
    for (auto& e : c.entries) {
      if (e.index < at) Apply(e);
    }
    if (c.snapshot) Restore(*c.snapshot);
    for (auto& e : c.entries) {
      if (e.index > at) Apply(e);
    }
  }
  void Apply(const storage::LogEntry& e) {
    ASSERT_GT(e.index, applied) << "entries must be applied in index order, once";
    applied = e.index;
    commands.push_back(e.data);
  }
};

struct Replica {
  uint64_t id = 0;
  std::unique_ptr<storage::MemoryStore> kv = std::make_unique<storage::MemoryStore>();
  std::unique_ptr<storage::LogStore> store;
  std::unique_ptr<PeerTransport> transport;
  std::unique_ptr<RaftLog> log;
  Machine machine;
  std::vector<std::string> reads;  // ReadIndex contexts served, in order
  std::vector<size_t> read_saw;    // how many commands were applied when each was served
  bool join = false;                        // started outside the configuration
  std::vector<ReplicaAddress> directory;    // what its command line would say
  // SIGSTOP: the process and its sockets are there (peers' frames queue for
  // it), but its loop does not turn.
  bool paused = false;
  bool up() const { return log != nullptr; }
};

class RaftLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    replicas_.resize(3);
    for (size_t i = 0; i < replicas_.size(); ++i) {
      replicas_[i].id = i + 1;
      auto transport = PeerTransport::Open(context_, PeerTransportOptions{.listen_endpoint = "tcp://127.0.0.1:0"});
      ASSERT_TRUE(transport.ok()) << transport.status().ToString();
      replicas_[i].transport = std::move(transport).value();
    }
    for (auto& r : replicas_) {
      for (auto& peer : replicas_) {
        if (peer.id != r.id) {
          ASSERT_TRUE(r.transport->AddPeer(peer.id, peer.transport->listen_endpoint()).ok());
        }
      }
    }
    for (auto& r : replicas_) Start(r);
  }

  void Start(Replica& r) {
    auto log = Open(r);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    r.log = std::move(log).value();
    r.machine = Machine{};
    auto recovered = r.log->Recover();
    ASSERT_TRUE(recovered.ok());
    r.machine.Take(std::move(recovered).value());
  }

  // The replica's LogStore and RaftLog, as Start makes them; r.store is set.
  Result<std::unique_ptr<RaftLog>> Open(Replica& r) {
    auto store = storage::LogStore::Open(r.kv.get());
    if (!store.ok()) return store.status();
    r.store = std::move(store).value();
    RaftLogOptions options;
    options.id = r.id;
    options.voters = {1, 2, 3};
    options.join = r.join;
    options.directory = r.directory;
    options.tick_ms = 10;
    options.election_ticks = 10;
    options.heartbeat_ticks = 1;
    options.seed = 7 + r.id;
    options.clock = &clock_;
    options.snapshot_dir = ImageDir(r);
    if (snapshot_chunk_bytes_ != 0) options.snapshot_chunk_bytes = snapshot_chunk_bytes_;
    auto version = state_versions_.find(r.id);
    options.state_version = version == state_versions_.end() ? kHarnessStateVersion : version->second;
    return RaftLog::Open(options, r.store.get(), r.transport.get());
  }

  // Where replica r keeps snapshot image files: empty (inline snapshots)
  // unless the fixture set image_root_.
  std::string ImageDir(const Replica& r) const {
    return image_root_.empty() ? "" : image_root_ + "/replica-" + std::to_string(r.id);
  }

  // A new replica started with --join: its command line names the others'
  // peer endpoints, but it is in no configuration until the leader adds it.
  Replica& StartJoining(uint64_t id) {
    Replica& r = replicas_.emplace_back();
    r.id = id;
    auto transport = PeerTransport::Open(context_, PeerTransportOptions{.listen_endpoint = "tcp://127.0.0.1:0"});
    EXPECT_TRUE(transport.ok()) << transport.status().ToString();
    r.transport = std::move(transport).value();
    r.join = true;
    for (auto& peer : replicas_) {
      if (peer.id != id) r.directory.push_back(ReplicaAddress{peer.id, peer.transport->listen_endpoint(), ""});
    }
    Start(r);
    return r;
  }

  Replica& ById(uint64_t id) {
    for (auto& r : replicas_) {
      if (r.id == id) return r;
    }
    ADD_FAILURE() << "no replica " << id;
    return replicas_.front();
  }

  // A crash: whatever was not synced is lost with the process.
  void Crash(Replica& r) {
    Stop(r);
    r.kv->DropUnsyncedWrites();
  }
  // A clean stop: the process ends, the machine keeps every write.
  void Stop(Replica& r) {
    r.log.reset();
    r.store.reset();
  }

  // One loop turn of every live replica, then up to 1 ms for the network.
  void Turn() {
    clock_.Advance(5);
    std::vector<zmq::pollitem_t> items;
    for (auto& r : replicas_) {
      if (!r.up() || r.paused) continue;
      for (auto& frame : r.transport->Drain()) r.log->Receive(frame.bytes, frame.sender);
      r.log->Tick();
      while (r.log->HasUnsynced()) {
        auto committed = r.log->Sync();
        ASSERT_TRUE(committed.ok()) << committed.status().ToString();
        r.machine.Take(std::move(committed).value());
        for (auto& read : r.log->TakeReadyReads()) {
          r.reads.push_back(std::move(read));
          r.read_saw.push_back(r.machine.commands.size());
        }
      }
      items.push_back({r.transport->inbound().handle(), 0, ZMQ_POLLIN, 0});
    }
    zmq::poll(items.data(), items.size(), std::chrono::milliseconds(1));
  }

  bool RunUntil(const std::function<bool()>& done, int max_turns = 3000) {
    for (int i = 0; i < max_turns; ++i) {
      if (done()) return true;
      Turn();
      if (::testing::Test::HasFatalFailure()) return false;
    }
    return done();
  }

  Replica* Leader() {
    Replica* leader = nullptr;
    for (auto& r : replicas_) {
      if (r.up() && r.log->IsLeader()) {
        if (leader != nullptr && leader->log->term() == r.log->term()) return nullptr;  // two in one term: a bug
        if (leader == nullptr || r.log->term() > leader->log->term()) leader = &r;
      }
    }
    return leader;
  }

  // A leader that every live member follows (a replica waiting to join, or
  // one removed, hears from no leader).
  Replica* StableLeader() {
    Replica* leader = Leader();
    if (leader == nullptr) return nullptr;
    const std::vector<uint64_t> voters = leader->log->info().voters;
    for (auto& r : replicas_) {
      if (!r.up() || std::find(voters.begin(), voters.end(), r.id) == voters.end()) continue;
      if (r.log->leader() != leader->id || r.log->term() != leader->log->term()) return nullptr;
    }
    return leader;
  }

  Replica& AwaitLeader() {
    EXPECT_TRUE(RunUntil([&] { return StableLeader() != nullptr; })) << "no leader elected";
    Replica* leader = StableLeader();
    if (leader == nullptr) std::abort();  // the failure above says why; nothing below can run
    return *leader;
  }

  void ProposeAll(Replica& leader, const std::string& prefix, int n) {
    for (int i = 0; i < n; ++i) {
      auto index = leader.log->Propose(prefix + std::to_string(i));
      ASSERT_TRUE(index.ok()) << index.status().ToString();
    }
  }

  bool AllApplied(size_t commands) {
    for (auto& r : replicas_) {
      if (r.up() && r.machine.commands.size() != commands) return false;
    }
    return true;
  }

  zmq::context_t context_;
  FakeClock clock_;
  std::string image_root_;           // set before SetUp: replicas keep snapshot images as files
  size_t snapshot_chunk_bytes_ = 0;  // 0: RaftLogOptions' default
  // The state version a replica advertises when next opened (0: none, a
  // binary from before versions); absent: kHarnessStateVersion.
  static constexpr uint32_t kHarnessStateVersion = 2;
  std::map<uint64_t, uint32_t> state_versions_;
  std::deque<Replica> replicas_;  // a deque: adding one keeps references valid
};

}  // namespace gpool::replication::testing
