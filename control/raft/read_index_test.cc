// ReadIndex: linearizable reads confirmed by a heartbeat quorum, forwarded
// from followers, never served by a deposed leader, and released only once
// the state machine has caught up with the read index.
#include <gtest/gtest.h>

#include "control/raft/test_network.h"
#include "protocol/message_type.h"
#include "protocol/model/users.h"

namespace gpool::raft {
namespace {

using testing::TestNetwork;

TEST(ReadIndexTest, LeaderConfirmsWithAHeartbeatRound) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  ASSERT_TRUE(net.Propose(1, "a").ok());
  ASSERT_TRUE(net.node(1).ReadIndex("r1").ok());
  EXPECT_TRUE(net.reads(1).empty()) << "not before a quorum answered";
  net.ClearDelivered();
  net.Flush();
  int heartbeats = 0;
  for (const auto& m : net.delivered()) heartbeats += m.type == MessageType::kHeartbeat && m.context == "r1";
  EXPECT_EQ(heartbeats, 2);
  ASSERT_EQ(net.reads(1).size(), 1u);
  EXPECT_EQ(net.reads(1)[0], (ReadState{2, "r1"}));
}

TEST(ReadIndexTest, FollowerForwardsToTheLeader) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  ASSERT_TRUE(net.Propose(1, "a").ok());
  ASSERT_TRUE(net.node(3).ReadIndex("f1").ok());
  net.Flush();
  ASSERT_EQ(net.reads(3).size(), 1u);
  EXPECT_EQ(net.reads(3)[0], (ReadState{2, "f1"}));
  EXPECT_GE(net.state(3).applied, 2u);
}

TEST(ReadIndexTest, FollowerWithoutALeaderRefuses) {
  TestNetwork net({1, 2, 3});
  EXPECT_EQ(net.node(2).ReadIndex("x").code(), StatusCode::kNotLeader);
}

TEST(ReadIndexTest, SingleVoterAnswersAtOnce) {
  TestNetwork net({1});
  net.TickAll(25);
  ASSERT_TRUE(net.node(1).ReadIndex("solo").ok());
  net.Flush();
  ASSERT_EQ(net.reads(1).size(), 1u);
  EXPECT_EQ(net.reads(1)[0].index, 1u);
}

TEST(ReadIndexTest, DeposedLeaderNeverServes) {
  // Without check-quorum the old leader keeps believing it leads; the
  // heartbeat round is what stops it serving a stale read.
  TestNetwork net({1, 2, 3}, {.pre_vote = false, .check_quorum = false});
  net.Campaign(1);
  net.Isolate(1);
  net.Campaign(2);
  ASSERT_TRUE(net.Propose(2, "newer").ok());
  EXPECT_EQ(net.info(1).role, Role::kLeader);
  ASSERT_TRUE(net.node(1).ReadIndex("stale").ok());
  net.TickAll(10);
  EXPECT_TRUE(net.reads(1).empty());
  net.Heal();
  net.TickAll(5);
  EXPECT_EQ(net.info(1).role, Role::kFollower);
  EXPECT_TRUE(net.reads(1).empty()) << "the request is dropped with the leadership";
  // The new leader serves, at an index covering "newer".
  ASSERT_TRUE(net.node(2).ReadIndex("fresh").ok());
  net.Flush();
  ASSERT_EQ(net.reads(2).size(), 1u);
  EXPECT_GE(net.reads(2)[0].index, 3u);
}

TEST(ReadIndexTest, CheckQuorumLeaderDropsReadsWhenItStepsDown) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  net.Isolate(1);
  ASSERT_TRUE(net.node(1).ReadIndex("r").ok());
  net.Tick(1, 25);
  EXPECT_EQ(net.info(1).role, Role::kFollower);
  net.Heal();
  net.TickAll(30);
  EXPECT_TRUE(net.reads(1).empty());
}

TEST(ReadIndexTest, NewLeaderWaitsForItsFirstCommit) {
  TestNetwork net({1, 2, 3});
  net.DropIf([](const Message& m) { return m.type == MessageType::kAppend; });
  net.Campaign(1);
  ASSERT_EQ(net.info(1).role, Role::kLeader);
  ASSERT_EQ(net.info(1).commit, 0u);
  ASSERT_TRUE(net.node(1).ReadIndex("early").ok());
  net.TickAll(2);
  EXPECT_TRUE(net.reads(1).empty()) << "the commit index of an earlier term is not known to be current";
  net.Heal();
  net.TickAll(2);
  ASSERT_EQ(net.reads(1).size(), 1u);
  EXPECT_EQ(net.reads(1)[0].index, 1u);
}

TEST(ReadIndexTest, ReadIsReleasedOnlyOnceAppliedCatchesUp) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  net.DropIf([](const Message& m) { return m.to == 2 && m.type == MessageType::kAppend; });
  ASSERT_TRUE(net.Propose(1, "x").ok());
  ASSERT_TRUE(net.node(2).ReadIndex("lagging").ok());
  net.Flush();
  EXPECT_EQ(net.info(2).applied, 1u);
  EXPECT_TRUE(net.reads(2).empty()) << "read index 2 is ahead of what node 2 applied";
  net.Heal();
  net.TickAll(2);
  ASSERT_EQ(net.reads(2).size(), 1u);
  EXPECT_EQ(net.reads(2)[0].index, 2u);
  EXPECT_EQ(net.state(2).applied, 2u);
}

// A backlog handed over in slices (Config::max_committed_per_ready, so a
// replica catching up applies it over several loop turns): every entry
// arrives, in order, no Ready hands over more than 16 slices' worth, and a
// read waits for the slice holding its index, not just for the commit. A
// burst under that comes whole.
TEST(ReadIndexTest, ABacklogComesInSlicesAndAReadWaitsForItsSlice) {
  TestNetwork net({1, 2, 3}, {.max_committed_per_ready = 2});
  net.Campaign(1);
  // The followers hear of the burst only after it is all proposed, so the
  // leader commits its 20 entries at once.
  net.DropIf([](const Message& m) { return m.type == MessageType::kAppend; });
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(net.Propose(1, "burst" + std::to_string(i)).ok());
  net.Flush();
  net.Heal();
  net.TickAll(2);
  EXPECT_EQ(net.largest_apply(1), 20u) << "20 is under 16 slices of 2: whole";

  net.DropIf([](const Message& m) { return m.to == 3 && m.type == MessageType::kAppend; });
  for (int i = 0; i < 95; ++i) ASSERT_TRUE(net.Propose(1, "e" + std::to_string(i)).ok());
  net.Flush();
  const uint64_t last = net.info(1).last_index;
  EXPECT_EQ(net.state(1).applied, last);
  EXPECT_EQ(net.state(3).applied, last - 95);
  net.Heal();
  ASSERT_TRUE(net.node(3).ReadIndex("behind").ok());
  net.TickAll(2);
  EXPECT_EQ(net.state(3).applied, last);
  EXPECT_EQ(net.state(3).commands.size(), 115u);
  ASSERT_EQ(net.reads(3).size(), 1u);
  EXPECT_EQ(net.reads(3)[0].index, last);
  for (uint64_t id : {1, 2, 3}) EXPECT_LE(net.largest_apply(id), 32u) << "node " << id;
}

}  // namespace
}  // namespace gpool::raft
