// Issue 50's rolling upgrades: every replica says which state version it
// runs on each Raft message, and the leader knows the lowest one among the
// replicas that apply its log (control/state/state_version.h).
#include <gtest/gtest.h>

#include "control/replication/raft_log.h"
#include "control/replication/raft_log_harness.h"

namespace gpool::replication {
namespace {

uint32_t VersionIn(const log::ReplicationReport& report, uint64_t id) {
  for (const auto& r : report.replicas) {
    if (r.id == id) return r.state_version;
  }
  ADD_FAILURE() << "replica " << id << " not in the report";
  return 0;
}

TEST_F(RaftLogTest, TheLeaderKnowsTheLowestStateVersionOfItsReplicas) {
  // Whoever leads when asked: a restart below may move leadership, and a
  // follower hears from the leader only.
  const auto floor_is = [&](uint32_t version) {
    Replica* leader = StableLeader();
    return leader != nullptr && leader->log->LowestStateVersion().version == version;
  };
  ASSERT_TRUE(RunUntil([&] { return floor_is(kHarnessStateVersion); }));
  EXPECT_EQ(StableLeader()->log->LowestStateVersion().replica, 0u) << "nobody below the leader's own version";
  for (const auto& r : StableLeader()->log->Report().replicas) {
    EXPECT_EQ(r.state_version, kHarnessStateVersion) << "replica " << r.id;
  }

  // A follower restarted on an older binary (which sends no version): the
  // floor drops to version 1 and names it, until it is upgraded again.
  Replica& older = StableLeader()->id == 3 ? ById(2) : ById(3);
  Stop(older);
  state_versions_[older.id] = 0;
  Start(older);
  ASSERT_TRUE(RunUntil([&] { return floor_is(1); }));
  const log::StateVersionFloor floor = StableLeader()->log->LowestStateVersion();
  EXPECT_EQ(floor.replica, older.id);
  EXPECT_TRUE(floor.heard);
  EXPECT_EQ(VersionIn(StableLeader()->log->Report(), older.id), 0u) << "sent none: shown as unknown";

  Stop(older);
  state_versions_.erase(older.id);
  Start(older);
  ASSERT_TRUE(RunUntil([&] { return floor_is(kHarnessStateVersion); }));
  EXPECT_EQ(StableLeader()->log->LowestStateVersion().replica, 0u);
  EXPECT_EQ(VersionIn(StableLeader()->log->Report(), older.id), kHarnessStateVersion);
}

TEST_F(RaftLogTest, AReplicaNotHeardFromCountsAsTheOldest) {
  // Replica 3 is down from the start: nobody has heard what it runs.
  Stop(ById(3));
  Replica& leader = AwaitLeader();
  const log::StateVersionFloor floor = leader.log->LowestStateVersion();
  EXPECT_EQ(floor.version, 1u);
  EXPECT_EQ(floor.replica, 3u);
  EXPECT_FALSE(floor.heard);
}

TEST_F(RaftLogTest, FramesFromReplicasOutsideTheDirectoryAreNotRemembered) {
  // Without CurveZMQ anyone can reach the peer port: a frame claiming a
  // made-up sender must not grow what the leader keeps per replica.
  Replica& leader = AwaitLeader();
  ASSERT_TRUE(RunUntil([&] { return leader.log->remembered_peers() == 2; }));
  for (uint64_t stranger = 100; stranger < 1100; ++stranger) {
    raft::Message m;
    m.type = raft::MessageType::kHeartbeatResponse;
    m.from = stranger;
    m.to = leader.id;
    m.term = 1;
    m.state_version = 1;
    leader.log->Receive(raft::EncodeMessage(m));
  }
  EXPECT_EQ(leader.log->remembered_peers(), 2u);
  // And a stranger's version cannot lower the floor either.
  EXPECT_EQ(leader.log->LowestStateVersion().version, kHarnessStateVersion);
}

}  // namespace
}  // namespace gpool::replication
