// Replica-set changes through RaftLog: a replica started with --join is
// added, learns the log and counts toward commits; replicas (the leader too)
// are removed; the directory of addresses survives restarts, from the log
// and from snapshots; and every refusal is typed.
#include <gtest/gtest.h>

#include <algorithm>

#include "control/replication/raft_log.h"
#include "control/replication/raft_log_harness.h"

namespace gpool::replication {
namespace {

using testing::RaftLogTest;
using testing::Replica;

using raft::ConfChangeType;

#define ASSERT_TRUE_OR_EMPTY(condition) \
  do {                                  \
    if (!(condition)) {                 \
      ADD_FAILURE() << #condition;      \
      return {};                        \
    }                                   \
  } while (0)

class RaftLogMembershipTest : public RaftLogTest {
 protected:
  // Proposes a change at the stable leader and runs until it commits there.
  // Returns the committed change as the proposer saw it.
  CommittedConfChange Change(ConfChangeType type, const ReplicaAddress& address) {
    // The coordinator only proposes once it serves: leader with an entry of
    // its term applied (the core refuses a change before that).
    ASSERT_TRUE_OR_EMPTY(RunUntil([&] { return StableLeader() != nullptr && StableLeader()->log->LeaderCaughtUp(); }));
    Replica& leader = *StableLeader();
    auto index = leader.log->ProposeMembership(type, address);
    EXPECT_TRUE(index.ok()) << index.status().ToString();
    if (!index.ok()) return {};
    CommittedConfChange seen;
    EXPECT_TRUE(RunUntil([&] {
      if (!leader.up()) return false;
      for (auto& c : leader.log->TakeCommittedConfChanges()) {
        if (c.index == *index) seen = c;
      }
      return seen.index == *index;
    }));
    return seen;
  }

  static std::vector<uint64_t> Voters(const Replica& r) { return r.log->info().voters; }
};

TEST_F(RaftLogMembershipTest, JoiningReplicaIsAddedCatchesUpAndIsCountedInTheQuorum) {
  Replica& leader = AwaitLeader();
  ProposeAll(leader, "before-", 10);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(10); }));

  Replica& fourth = StartJoining(4);
  EXPECT_TRUE(Voters(fourth).empty()) << "a joining replica is in no configuration";
  for (int i = 0; i < 50; ++i) Turn();
  EXPECT_FALSE(fourth.log->IsLeader()) << "it must not campaign before it is added";

  const CommittedConfChange added =
      Change(ConfChangeType::kAddVoter, ReplicaAddress{4, fourth.transport->listen_endpoint(), "tcp://10.9.9.4:7400"});
  EXPECT_EQ(added.voters, (std::vector<uint64_t>{1, 2, 3, 4}));
  ASSERT_TRUE(RunUntil([&] { return AllApplied(10); }));
  EXPECT_EQ(fourth.machine.commands, leader.machine.commands);
  EXPECT_EQ(Voters(fourth), (std::vector<uint64_t>{1, 2, 3, 4}));
  for (auto& r : replicas_) EXPECT_EQ(r.log->directory().ClientOf(4), "tcp://10.9.9.4:7400") << "replica " << r.id;

  // With four voters a commit needs three: the leader, the new replica and
  // one more. Take away one original follower: commits go on only if the
  // new replica's acknowledgements count.
  uint64_t crashed = 0;
  for (auto& r : replicas_) {
    if (r.id != leader.id && r.id != 4 && crashed == 0) {
      crashed = r.id;
      Crash(r);
    }
  }
  ProposeAll(leader, "after-", 5);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(15); }));
  EXPECT_EQ(fourth.machine.commands.back(), "after-4");
}

TEST_F(RaftLogMembershipTest, RemovedFollowerIsDroppedAndTheRestCommitWithoutIt) {
  Replica& leader = AwaitLeader();
  const uint64_t leader_id = leader.id;
  Replica& victim = replicas_[leader.id % 3];
  const uint64_t victim_id = victim.id;
  const CommittedConfChange removed = Change(ConfChangeType::kRemoveVoter, ReplicaAddress{victim_id, "", ""});
  EXPECT_EQ(removed.voters.size(), 2u);
  EXPECT_EQ(std::count(removed.voters.begin(), removed.voters.end(), victim_id), 0);
  EXPECT_EQ(leader.log->directory().Find(victim_id), nullptr) << "the leader forgets its address";
  // It learns that it was removed (the coordinator exits on that).
  bool told = false;
  ASSERT_TRUE(RunUntil([&] {
    for (auto& c : victim.log->TakeCommittedConfChanges()) {
      told = told || (c.change.type == ConfChangeType::kRemoveVoter && c.change.node_id == victim_id);
    }
    return told;
  }));
  Crash(victim);
  ProposeAll(ById(leader_id), "two-", 3);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(3); }));
}

TEST_F(RaftLogMembershipTest, RemovingTheLeaderElectsAnotherAmongTheRest) {
  Replica& leader = AwaitLeader();
  const uint64_t old_leader = leader.id;
  const CommittedConfChange removed = Change(ConfChangeType::kRemoveVoter, ReplicaAddress{old_leader, "", ""});
  EXPECT_EQ(removed.voters.size(), 2u);
  ASSERT_TRUE(RunUntil([&] {
    for (auto& r : replicas_) {
      if (r.id != old_leader && r.log->IsLeader()) return true;
    }
    return false;
  }));
  EXPECT_FALSE(ById(old_leader).log->IsLeader());
  Crash(ById(old_leader));
  Replica* next = StableLeader();
  ASSERT_TRUE(RunUntil([&] { return (next = StableLeader()) != nullptr; }));
  ProposeAll(*next, "after-", 2);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(2); }));
}

TEST_F(RaftLogMembershipTest, DirectorySurvivesRestartFromTheLogAndFromASnapshot) {
  Replica& fourth = StartJoining(4);
  Change(ConfChangeType::kAddVoter,
         ReplicaAddress{4, fourth.transport->listen_endpoint(), "tcp://10.9.9.4:7400", "tcp://10.9.9.4:7401"});
  Replica& leader = AwaitLeader();
  ProposeAll(leader, "c-", 3);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(3); }));

  // A follower restarts: the address comes back from its log.
  Replica& follower = replicas_[leader.id % 3];
  Stop(follower);
  Start(follower);
  EXPECT_EQ(follower.log->directory().ClientOf(4), "tcp://10.9.9.4:7400");
  EXPECT_EQ(follower.log->directory().WorkerOf(4), "tcp://10.9.9.4:7401");

  // The leader compacts the entry away, then restarts: the snapshot has it.
  ASSERT_TRUE(leader.log->SaveSnapshot(leader.machine.applied, leader.machine.Snapshot()).ok());
  ASSERT_GT(leader.store->FirstIndex(), 1u);
  Stop(leader);
  Start(leader);
  EXPECT_EQ(leader.log->directory().ClientOf(4), "tcp://10.9.9.4:7400");
  EXPECT_EQ(leader.log->directory().WorkerOf(4), "tcp://10.9.9.4:7401");
  EXPECT_EQ(leader.machine.commands, (std::vector<std::string>{"c-0", "c-1", "c-2"}));
}

TEST_F(RaftLogMembershipTest, RefusalsAreTyped) {
  ASSERT_TRUE(RunUntil([&] { return StableLeader() != nullptr && StableLeader()->log->LeaderCaughtUp(); }));
  Replica& leader = *StableLeader();
  Replica& follower = replicas_[leader.id % 3];
  EXPECT_EQ(follower.log->ProposeMembership(ConfChangeType::kRemoveVoter, ReplicaAddress{1, "", ""}).status().code(),
            StatusCode::kNotLeader);
  EXPECT_EQ(leader.log->ProposeMembership(ConfChangeType::kAddVoter, ReplicaAddress{2, "tcp://127.0.0.1:1", ""})
                .status()
                .code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(leader.log->ProposeMembership(ConfChangeType::kRemoveVoter, ReplicaAddress{9, "", ""}).status().code(),
            StatusCode::kNotFound);
  // One change at a time: the second waits for the first to commit.
  ASSERT_TRUE(leader.log->ProposeMembership(ConfChangeType::kAddVoter, ReplicaAddress{5, "tcp://127.0.0.1:1", ""}).ok());
  EXPECT_EQ(leader.log->ProposeMembership(ConfChangeType::kAddVoter, ReplicaAddress{6, "tcp://127.0.0.1:2", ""})
                .status()
                .code(),
            StatusCode::kFailedPrecondition);
}

TEST(ReplicaDirectoryTest, AddressesAndImagesRoundTrip) {
  ReplicaAddress a{4, "tcp://10.0.0.4:7402", "tcp://10.0.0.4:7400"};
  auto decoded = DecodeReplicaAddress(EncodeReplicaAddress(a));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, a);
  EXPECT_EQ(DecodeReplicaAddress("\xc1").status().code(), StatusCode::kMalformed);
  SnapshotImage image{{a}, std::string("\x00state", 6)};
  auto back = DecodeSnapshotImage(EncodeSnapshotImage(image));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->replicas, image.replicas);
  EXPECT_EQ(back->state, image.state);
  ReplicaDirectory directory;
  directory.Merge({a});
  directory.Put(ReplicaAddress{4, "tcp://10.0.0.5:7402", ""});
  EXPECT_EQ(directory.Find(4)->peer, "tcp://10.0.0.5:7402") << "later entries replace earlier ones";
  EXPECT_EQ(directory.ClientOf(4), "");
  EXPECT_EQ(directory.ClientOf(7), "");
}

}  // namespace
}  // namespace gpool::replication
