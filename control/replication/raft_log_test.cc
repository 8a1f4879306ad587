// RaftLog over real PeerTransports on 127.0.0.1 and MemoryStore-backed
// LogStores: three replicas in one process, driven turn by turn the way the
// coordinator's loop drives one. Time is a FakeClock, so elections depend on
// turns, not on how fast the machine is; sockets still carry every message.
#include "control/replication/raft_log.h"

#include <gtest/gtest.h>

#include <array>
#include <optional>

#include "control/replication/stored_snapshot.h"
#include "storage/memory_store.h"

namespace gpool::replication {
namespace {

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
  bool up() const { return log != nullptr; }
};

class RaftLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (size_t i = 0; i < replicas_.size(); ++i) {
      replicas_[i].id = i + 1;
      auto transport = PeerTransport::Open(context_, PeerTransportOptions{.listen_endpoint = "tcp://127.0.0.1:0"});
      ASSERT_TRUE(transport.ok()) << transport.status().ToString();
      replicas_[i].transport = std::move(transport).value();
    }
    for (auto& r : replicas_) {
      for (auto& peer : replicas_) {
        if (peer.id != r.id) r.transport->AddPeer(peer.id, peer.transport->listen_endpoint());
      }
    }
    for (auto& r : replicas_) Start(r);
  }

  void Start(Replica& r) {
    auto store = storage::LogStore::Open(r.kv.get());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    r.store = std::move(store).value();
    RaftLogOptions options;
    options.id = r.id;
    options.voters = {1, 2, 3};
    options.tick_ms = 10;
    options.election_ticks = 10;
    options.seed = 7 + r.id;
    options.clock = &clock_;
    auto log = RaftLog::Open(options, r.store.get(), r.transport.get());
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    r.log = std::move(log).value();
    r.machine = Machine{};
    auto recovered = r.log->Recover();
    ASSERT_TRUE(recovered.ok());
    r.machine.Take(std::move(recovered).value());
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
      if (!r.up()) continue;
      for (auto& frame : r.transport->Drain()) r.log->Receive(frame);
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

  // A leader that every live replica follows.
  Replica* StableLeader() {
    Replica* leader = Leader();
    if (leader == nullptr) return nullptr;
    for (auto& r : replicas_) {
      if (r.up() && (r.log->leader() != leader->id || r.log->term() != leader->log->term())) return nullptr;
    }
    return leader;
  }

  Replica& AwaitLeader() {
    EXPECT_TRUE(RunUntil([&] { return StableLeader() != nullptr; })) << "no leader elected";
    return *StableLeader();
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
  std::array<Replica, 3> replicas_;
};

TEST_F(RaftLogTest, ElectsOneLeaderAndReplicatesInOrder) {
  Replica& leader = AwaitLeader();
  ASSERT_GT(leader.log->term(), 0u);
  ProposeAll(leader, "cmd-", 100);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(100); }));
  for (auto& r : replicas_) {
    EXPECT_EQ(r.machine.commands, leader.machine.commands) << "replica " << r.id;
    EXPECT_EQ(r.log->term(), leader.log->term());
    EXPECT_EQ(r.log->leader(), leader.id);
  }
  EXPECT_EQ(leader.machine.commands.front(), "cmd-0");
  EXPECT_EQ(leader.machine.commands.back(), "cmd-99");
  // The leader reports every follower's progress (once their last
  // acknowledgements are in).
  ASSERT_TRUE(RunUntil([&] {
    for (const auto& p : leader.log->Replicas()) {
      if (p.match != leader.log->commit_index()) return false;
    }
    return true;
  }));
  auto replicas = leader.log->Replicas();
  ASSERT_EQ(replicas.size(), 3u);
  for (const auto& p : replicas) {
    EXPECT_EQ(p.role, p.id == leader.id ? "leader" : "follower");
    EXPECT_EQ(p.match, leader.log->commit_index()) << "replica " << p.id;
  }
}

TEST_F(RaftLogTest, FollowersRefuseProposalsWithNotLeader) {
  Replica& leader = AwaitLeader();
  for (auto& r : replicas_) {
    if (r.id == leader.id) continue;
    auto index = r.log->Propose("x");
    ASSERT_FALSE(index.ok());
    EXPECT_EQ(index.status().code(), StatusCode::kNotLeader) << index.status().ToString();
    EXPECT_EQ(r.log->leader(), leader.id);
  }
}

TEST_F(RaftLogTest, CommittedEntriesAreDurableOnTheLeaderAndAMajority) {
  Replica& leader = AwaitLeader();
  ProposeAll(leader, "d-", 10);
  ASSERT_TRUE(RunUntil([&] { return leader.machine.commands.size() == 10; }));
  int durable = 0;
  for (auto& r : replicas_) {
    // Entries are always written synced: count replicas whose log holds the
    // last applied index.
    if (r.store->LastIndex() >= leader.machine.applied) ++durable;
  }
  EXPECT_GE(durable, 2);
  // Crash everybody, losing unsynced writes, and restart: nothing applied is lost.
  for (auto& r : replicas_) Crash(r);
  for (auto& r : replicas_) Start(r);
  Replica& again = AwaitLeader();
  ProposeAll(again, "e-", 1);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(11); }));
  EXPECT_EQ(again.machine.commands[9], "d-9");
}

TEST_F(RaftLogTest, RestartedFollowerCatchesUpFromItsLogAndTheLeader) {
  Replica& leader = AwaitLeader();
  ProposeAll(leader, "a-", 20);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(20); }));
  Replica& follower = replicas_[leader.id % 3];
  Stop(follower);
  ProposeAll(leader, "b-", 30);
  ASSERT_TRUE(RunUntil([&] { return leader.machine.commands.size() == 50; }));
  Start(follower);
  // It replays its own committed log at once, then gets the rest from the leader.
  EXPECT_EQ(follower.machine.commands.size(), 20u);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(50); }));
  EXPECT_EQ(follower.machine.commands, leader.machine.commands);
  EXPECT_EQ(follower.log->stats().snapshots_installed, 0u);
  // After a crash (a commit index that was not yet synced is lost) it still
  // catches up: the leader tells it again what is committed.
  Crash(follower);
  ProposeAll(leader, "c-", 5);
  Start(follower);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(55); }));
  EXPECT_EQ(follower.machine.commands, leader.machine.commands);
}

TEST_F(RaftLogTest, FollowerWithAnEmptyDataDirCatchesUpBySnapshot) {
  Replica& leader = AwaitLeader();
  Replica& follower = replicas_[leader.id % 3];
  // The follower acknowledges entries first, so the leader's progress for
  // it is past what its empty disk will hold.
  ProposeAll(leader, "r-", 5);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(5); }));
  Crash(follower);
  ProposeAll(leader, "s-", 40);
  ASSERT_TRUE(RunUntil([&] { return leader.machine.commands.size() == 45; }));
  // The leader snapshots its state machine: the log behind it is gone.
  ASSERT_TRUE(leader.log->SaveSnapshot(leader.machine.applied, leader.machine.Snapshot()).ok());
  EXPECT_EQ(leader.store->FirstIndex(), leader.machine.applied + 1);
  ProposeAll(leader, "t-", 5);
  // The follower lost its disk.
  follower.kv = std::make_unique<storage::MemoryStore>();
  Start(follower);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(50); }));
  EXPECT_EQ(follower.machine.commands, leader.machine.commands);
  EXPECT_EQ(follower.log->stats().snapshots_installed, 1u);
  // The snapshot it received is durable with its configuration: a restart
  // comes back from it.
  auto stored = follower.store->LoadSnapshot();
  ASSERT_TRUE(stored.ok() && stored->has_value());
  auto decoded = DecodeStoredSnapshot((*stored)->second);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->conf.voters, (std::vector<uint64_t>{1, 2, 3}));
  Crash(follower);
  Start(follower);
  EXPECT_GE(follower.machine.commands.size(), 45u);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(50); }));
  EXPECT_EQ(follower.machine.commands, leader.machine.commands);
}

TEST_F(RaftLogTest, FollowerThatLostItsLogIsReprobedByTheSameLeader) {
  Replica& leader = AwaitLeader();
  const uint64_t leader_id = leader.id;
  Replica& follower = replicas_[leader.id % 3];
  ProposeAll(leader, "r-", 5);
  ASSERT_TRUE(RunUntil([&] {
    for (const auto& p : leader.log->Replicas()) {
      if (p.match != leader.log->commit_index()) return false;
    }
    return AllApplied(5);
  }));
  // Its disk is gone and nothing new is proposed: only heartbeats reach it,
  // refused, and the leader probes it from its real end.
  Crash(follower);
  follower.kv = std::make_unique<storage::MemoryStore>();
  Start(follower);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(5) && StableLeader() != nullptr; }));
  EXPECT_EQ(follower.machine.commands, leader.machine.commands);
  EXPECT_EQ(StableLeader()->id, leader_id) << "no leadership change is needed";
}

TEST_F(RaftLogTest, LeaderCrashElectsANewLeaderThatKeepsEveryCommittedEntry) {
  Replica& first = AwaitLeader();
  const uint64_t first_term = first.log->term();
  ProposeAll(first, "p-", 30);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(30); }));
  Crash(first);
  Replica& second = AwaitLeader();
  EXPECT_NE(second.id, first.id);
  EXPECT_GT(second.log->term(), first_term);
  ProposeAll(second, "q-", 10);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(40); }));
  Start(first);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(40) && StableLeader() != nullptr; }));
  for (auto& r : replicas_) EXPECT_EQ(r.machine.commands, second.machine.commands) << "replica " << r.id;
}

TEST_F(RaftLogTest, ReadIndexIsServedOnceTheStateCoversEveryEarlierCommit) {
  Replica& leader = AwaitLeader();
  ProposeAll(leader, "w-", 10);
  // The writes are acknowledged (applied on the leader) ...
  ASSERT_TRUE(RunUntil([&] { return leader.machine.commands.size() == 10; }));
  // ... so a read issued now, anywhere, must see all of them. A follower
  // forwards its read to the leader and serves it once it has applied up to
  // the leader's commit index at the time, however far behind it was.
  Replica& follower = replicas_[leader.id % 3];
  ASSERT_TRUE(leader.log->ReadIndex("read-1").ok());
  ASSERT_TRUE(follower.log->ReadIndex("read-2").ok());
  ASSERT_TRUE(RunUntil([&] { return !leader.reads.empty() && !follower.reads.empty(); }));
  EXPECT_EQ(leader.reads, std::vector<std::string>{"read-1"});
  EXPECT_EQ(follower.reads, std::vector<std::string>{"read-2"});
  EXPECT_EQ(leader.read_saw[0], 10u);
  EXPECT_EQ(follower.read_saw[0], 10u);
}

TEST_F(RaftLogTest, GarbageFromTheNetworkIsCountedAndDropped) {
  Replica& leader = AwaitLeader();
  Replica& follower = replicas_[leader.id % 3];
  follower.log->Receive("not a raft message");
  follower.log->Receive(std::string("\x81\xa4type\x01", 7));
  raft::Message elsewhere;
  elsewhere.type = raft::MessageType::kHeartbeat;
  elsewhere.from = leader.id;
  elsewhere.to = 42;
  elsewhere.term = leader.log->term();
  follower.log->Receive(raft::EncodeMessage(elsewhere));
  EXPECT_EQ(follower.log->stats().frames_malformed, 2u);
  EXPECT_EQ(follower.log->stats().frames_misaddressed, 1u);
  ProposeAll(leader, "ok-", 3);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(3); }));
}

TEST_F(RaftLogTest, ReplicaIdMustBeAVoter) {
  storage::MemoryStore kv;
  auto store = storage::LogStore::Open(&kv);
  ASSERT_TRUE(store.ok());
  RaftLogOptions options;
  options.id = 4;
  options.voters = {1, 2, 3};
  auto log = RaftLog::Open(options, store->get(), replicas_[0].transport.get());
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), StatusCode::kInvalidArgument);
}

TEST(StoredSnapshotTest, RoundTripsAndRefusesABareImage) {
  StoredSnapshot s{raft::ConfState{{3, 1, 2}}, std::string("\x00\x01state", 7)};
  auto decoded = DecodeStoredSnapshot(EncodeStoredSnapshot(s));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->conf.voters, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(decoded->state, s.state);
  auto bare = DecodeStoredSnapshot(std::string("\x81\xa7" "applied" "\x01", 10));
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.status().code(), StatusCode::kMalformed);
}

}  // namespace
}  // namespace gpool::replication
