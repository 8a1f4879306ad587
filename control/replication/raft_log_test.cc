// RaftLog over real PeerTransports on 127.0.0.1 and MemoryStore-backed
// LogStores: three replicas in one process, driven turn by turn the way the
// coordinator's loop drives one. Time is a FakeClock, so elections depend on
// turns, not on how fast the machine is; sockets still carry every message.
#include "control/replication/raft_log.h"

#include <gtest/gtest.h>

#include <optional>

#include "control/replication/raft_log_harness.h"
#include "control/replication/stored_snapshot.h"
#include "protocol/message_type.h"
#include "storage/testing/memory_store.h"

namespace gpool::replication {
namespace {

using testing::Machine;
using testing::RaftLogTest;
using testing::Replica;

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

// A replica admitted under its own key cannot speak for another: a higher-
// term vote request in a third replica's name, over the second's connection,
// is dropped and neither moves the term nor costs the leader its place.
TEST_F(RaftLogTest, AFrameInAnotherReplicasNameIsDropped) {
  Replica& leader = AwaitLeader();
  Replica& follower = replicas_[leader.id % 3];
  const uint64_t third = 6 - leader.id - follower.id;
  const uint64_t term = follower.log->term();
  raft::Message forged;
  forged.type = raft::MessageType::kVote;
  forged.from = third;
  forged.to = follower.id;
  forged.term = term + 5;
  follower.log->Receive(raft::EncodeMessage(forged), /*sender=*/leader.id);
  EXPECT_EQ(follower.log->stats().frames_impersonated, 1u);
  EXPECT_EQ(follower.log->term(), term);
  // The same frame over the named replica's own connection is Raft's to
  // judge (which may ignore it while it hears from its leader).
  follower.log->Receive(raft::EncodeMessage(forged), /*sender=*/third);
  EXPECT_EQ(follower.log->stats().frames_impersonated, 1u);
  ProposeAll(leader, "ok-", 3);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(3); }));
}

TEST(DropCoveredAppendResponsesTest, KeepsOnlyTheHighestAcceptOfATermPerReplicaAndEveryReject) {
  auto response = [](uint64_t to, uint64_t term, uint64_t index, bool reject = false) {
    raft::Message m;
    m.type = raft::MessageType::kAppendResponse;
    m.to = to;
    m.term = term;
    m.index = index;
    m.reject = reject;
    return m;
  };
  raft::Message vote;
  vote.type = raft::MessageType::kVoteResponse;
  vote.to = 1;
  vote.term = 3;
  std::vector<raft::Message> messages = {response(1, 3, 10), response(1, 3, 12, true), vote,
                                         response(2, 3, 11),  response(1, 3, 14),       response(1, 4, 9),
                                         response(1, 3, 13)};
  EXPECT_EQ(DropCoveredAppendResponses(messages), 1u);  // only (1, 3, 10): 14 covers it; 13 < 14 stays
  ASSERT_EQ(messages.size(), 6u);
  EXPECT_TRUE(messages[0].reject) << "a reject is never dropped";
  EXPECT_EQ(messages[1].type, raft::MessageType::kVoteResponse);
  EXPECT_EQ(messages[2].to, 2u);
  EXPECT_EQ(messages[3].index, 14u);
  EXPECT_EQ(messages[4].term, 4u) << "another term is another answer";
  EXPECT_EQ(messages[5].index, 13u) << "a lower index after a higher one is kept (order is not rewritten)";
}

TEST(MergeContiguousAppendsTest, AppendsThatContinueEachOtherBecomeOneFramePerReplica) {
  auto append = [](uint64_t to, uint64_t term, uint64_t prev, uint64_t prev_term, uint64_t count, uint64_t commit) {
    raft::Message m;
    m.type = raft::MessageType::kAppend;
    m.to = to;
    m.term = term;
    m.index = prev;
    m.log_term = prev_term;
    m.commit = commit;
    for (uint64_t i = 1; i <= count; ++i) m.entries.push_back(raft::LogEntry{prev + i, term, "x"});
    return m;
  };
  raft::Message beat;
  beat.type = raft::MessageType::kHeartbeat;
  beat.to = 3;
  std::vector<raft::Message> messages = {
      append(2, 5, 10, 5, 1, 9), append(3, 5, 10, 5, 1, 9),  // one proposal, to both followers
      append(2, 5, 11, 5, 1, 10), beat,                       // the next, to 2; a heartbeat to 3
      append(3, 5, 11, 5, 1, 10),                             // not merged across the heartbeat
      append(2, 5, 12, 5, 2, 10),                             // continues 2's
      append(2, 5, 20, 5, 1, 10),                             // a gap: its own frame
  };
  EXPECT_EQ(MergeContiguousAppends(messages, 1024, 1 << 20), 2u);
  ASSERT_EQ(messages.size(), 5u);
  EXPECT_EQ(messages[0].to, 2u);
  EXPECT_EQ(messages[0].index, 10u);
  ASSERT_EQ(messages[0].entries.size(), 4u);
  EXPECT_EQ(messages[0].entries.back().index, 14u);
  EXPECT_EQ(messages[0].commit, 10u) << "the merged append carries the higher commit";
  EXPECT_EQ(messages[1].entries.size(), 1u);
  EXPECT_EQ(messages[2].type, raft::MessageType::kHeartbeat);
  EXPECT_EQ(messages[3].to, 3u);
  EXPECT_EQ(messages[4].index, 20u);
  // The limits hold: two entries per frame at most.
  std::vector<raft::Message> capped = {append(2, 5, 10, 5, 1, 9), append(2, 5, 11, 5, 1, 9),
                                       append(2, 5, 12, 5, 1, 9)};
  EXPECT_EQ(MergeContiguousAppends(capped, 2, 1 << 20), 1u);
  EXPECT_EQ(capped.size(), 2u);
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
