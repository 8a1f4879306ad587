// Single-server membership changes (thesis 4.1): effective when appended,
// one at a time, a removed leader steps down, an overwritten change reverts.
#include <gtest/gtest.h>

#include "control/raft/test_network.h"
#include "protocol/message_type.h"
#include "protocol/model/users.h"

namespace gpool::raft {
namespace {

using testing::TestNetwork;
using Voters = std::vector<uint64_t>;

ConfChange Add(uint64_t id) { return {ConfChangeType::kAddVoter, id, "addr-" + std::to_string(id)}; }
ConfChange Remove(uint64_t id) { return {ConfChangeType::kRemoveVoter, id, ""}; }

TEST(MembershipTest, AddedVoterCatchesUpAndCountsInTheQuorum) {
  TestNetwork net({1, 2, 3});
  net.AddIdleNode(4);
  net.Campaign(1);
  ASSERT_TRUE(net.Propose(1, "before").ok());
  auto index = net.node(1).ProposeConfChange(Add(4));
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  net.Flush();
  for (uint64_t id : {1, 2, 3, 4}) EXPECT_EQ(net.info(id).voters, (Voters{1, 2, 3, 4})) << id;
  EXPECT_EQ(net.state(4).commands, std::vector<std::string>{"before"});
  // Four voters need three: the leader and node 4 alone cannot commit.
  net.Isolate(2);
  net.Isolate(3);
  auto p = net.Propose(1, "needs-three");
  ASSERT_TRUE(p.ok());
  EXPECT_LT(net.info(1).commit, *p);
  net.Heal();
  net.TickAll(2);
  EXPECT_EQ(net.info(1).commit, *p);
}

TEST(MembershipTest, ChangeTakesEffectWhenAppendedNotWhenCommitted) {
  TestNetwork net({1, 2, 3});
  net.AddIdleNode(4);
  net.Campaign(1);
  net.DropIf([](const Message& m) { return m.type == MessageType::kAppend; });
  auto index = net.node(1).ProposeConfChange(Add(4));
  ASSERT_TRUE(index.ok());
  net.Flush();
  EXPECT_LT(net.info(1).commit, *index);
  EXPECT_EQ(net.info(1).voters, (Voters{1, 2, 3, 4}));
  EXPECT_TRUE(net.info(1).progress.count(4));
  EXPECT_EQ(net.info(2).voters, (Voters{1, 2, 3})) << "followers switch when they append it";
}

TEST(MembershipTest, OnlyOneChangeMayBePending) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  net.DropIf([](const Message& m) { return m.type == MessageType::kAppend; });
  ASSERT_TRUE(net.node(1).ProposeConfChange(Add(4)).ok());
  EXPECT_EQ(net.node(1).ProposeConfChange(Add(5)).status().code(), StatusCode::kFailedPrecondition);
  net.Heal();
  net.TickAll(2);
  EXPECT_TRUE(net.node(1).ProposeConfChange(Remove(4)).ok());
}

TEST(MembershipTest, NewLeaderMustCommitItsOwnEntryFirst) {
  TestNetwork net({1, 2, 3});
  net.DropIf([](const Message& m) { return m.type == MessageType::kAppend; });
  net.Campaign(1);
  EXPECT_EQ(net.node(1).ProposeConfChange(Add(4)).status().code(), StatusCode::kFailedPrecondition);
}

TEST(MembershipTest, RejectsNoOpChanges) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  EXPECT_EQ(net.node(1).ProposeConfChange(Add(2)).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(net.node(1).ProposeConfChange(Remove(9)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(net.node(2).ProposeConfChange(Add(4)).status().code(), StatusCode::kNotLeader);
  TestNetwork solo({1});
  solo.TickAll(25);
  EXPECT_EQ(solo.node(1).ProposeConfChange(Remove(1)).status().code(), StatusCode::kFailedPrecondition);
}

TEST(MembershipTest, RemovedFollowerStopsCountingAndNeverCampaigns) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  auto removal = net.node(1).ProposeConfChange(Remove(3));
  ASSERT_TRUE(removal.ok());
  net.Flush();
  EXPECT_EQ(net.info(1).voters, (Voters{1, 2}));
  EXPECT_EQ(net.info(3).voters, (Voters{1, 2}));
  EXPECT_FALSE(net.info(1).progress.count(3));
  // The leader's last word to it: it commits its own removal, so the
  // application above it knows it is out (a coordinator then exits).
  EXPECT_GE(net.info(3).commit, *removal);
  net.Isolate(3);
  EXPECT_TRUE(net.Propose(1, "two-of-two").ok());
  EXPECT_EQ(net.state(2).commands.size(), 1u);
  const uint64_t term = net.info(3).term;
  net.Tick(3, 100);
  EXPECT_EQ(net.info(3).term, term);
  EXPECT_EQ(net.info(3).role, Role::kFollower);
}

TEST(MembershipTest, RemovedLeaderStepsDownOnceTheRemovalCommits) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  auto index = net.node(1).ProposeConfChange(Remove(1));
  ASSERT_TRUE(index.ok());
  // Until it commits the old leader still leads (without counting itself).
  EXPECT_EQ(net.info(1).role, Role::kLeader);
  EXPECT_EQ(net.node(1).Propose("x").status().code(), StatusCode::kNotLeader);
  net.Flush();
  EXPECT_EQ(net.info(1).role, Role::kFollower);
  // It handed over with TimeoutNow rather than waiting for a timeout.
  const uint64_t leader = net.Leader();
  ASSERT_TRUE(leader == 2 || leader == 3) << leader;
  EXPECT_EQ(net.info(leader).voters, (Voters{2, 3}));
  EXPECT_TRUE(net.Propose(leader, "after").ok());
  EXPECT_EQ(net.state(2).commands, std::vector<std::string>{"after"});
  net.Tick(1, 100);
  EXPECT_NE(net.info(1).role, Role::kLeader);
  EXPECT_EQ(net.Leader(), leader);
}

TEST(MembershipTest, OverwrittenChangeReverts) {
  TestNetwork net({1, 2, 3}, {.pre_vote = false, .check_quorum = false});
  net.Campaign(1);
  net.Isolate(1);
  ASSERT_TRUE(net.node(1).ProposeConfChange(Remove(3)).ok());
  net.Flush();
  EXPECT_EQ(net.info(1).voters, (Voters{1, 2}));
  net.Campaign(2);
  net.Heal();
  net.TickAll(2);
  EXPECT_EQ(net.info(1).lead, 2u);
  EXPECT_EQ(net.info(1).voters, (Voters{1, 2, 3})) << "the uncommitted removal was overwritten";
}

TEST(MembershipTest, NodeAddedAfterCompactionLearnsTheConfigurationFromTheSnapshot) {
  TestNetwork net({1, 2, 3});
  net.AddIdleNode(4);
  net.Campaign(1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(net.Propose(1, "c").ok());
  ASSERT_TRUE(net.Compact(1).ok());
  ASSERT_TRUE(net.node(1).ProposeConfChange(Add(4)).ok());
  net.Flush();
  EXPECT_EQ(net.info(4).snapshot_index, 4u);
  EXPECT_EQ(net.info(4).voters, (Voters{1, 2, 3, 4}));
  EXPECT_EQ(net.state(4).commands.size(), 3u);
  net.Crash(4);
  net.Restart(4);  // peers is empty for a joined node; durable state has it all
  EXPECT_EQ(net.info(4).voters, (Voters{1, 2, 3, 4}));
  EXPECT_EQ(net.state(4).commands.size(), 3u);
}

TEST(MembershipTest, CommittedConfChangeEntriesDecode) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  auto index = net.node(1).ProposeConfChange(Add(4));
  ASSERT_TRUE(index.ok());
  net.Flush();
  const LogEntry* e = net.node(2).log().At(*index);
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(TypeOf(*e), EntryType::kConfChange);
  auto cc = DecodeConfChange(*e);
  ASSERT_TRUE(cc.ok());
  EXPECT_EQ(cc->change, Add(4));
  EXPECT_EQ(cc->result.voters, (Voters{1, 2, 3, 4}));
}

}  // namespace
}  // namespace gpool::raft
