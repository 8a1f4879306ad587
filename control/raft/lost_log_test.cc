// A voter restarted with an empty data dir under its old id. Raft assumes
// durable logs, so the leader's progress still says the follower holds what
// it acknowledged; these tests pin down how the core notices the loss
// (refused heartbeat commit, refused append below `match`) and probes the
// follower from its real end, by appends or by snapshot.
#include <gtest/gtest.h>

#include "control/raft/test_network.h"
#include "protocol/message_type.h"

namespace gpool::raft {
namespace {

using testing::TestNetwork;

void ProposeMany(TestNetwork& net, uint64_t leader, int n, const std::string& prefix) {
  for (int i = 0; i < n; ++i) ASSERT_TRUE(net.Propose(leader, prefix + std::to_string(i)).ok());
}

TEST(LostLogTest, HeartbeatCommitPastTheLogIsRefusedNotApplied) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  ProposeMany(net, 1, 3, "c");
  net.RestartEmpty(3);
  net.Isolate(3);  // keep the leader from repairing it before we look
  Message hb{.type = MessageType::kHeartbeat, .from = 1, .to = 3, .term = net.info(1).term, .commit = 4};
  ASSERT_TRUE(net.node(3).Step(hb).ok());
  EXPECT_EQ(net.info(3).commit, 0u);
  Ready rd = net.node(3).GetReady();
  ASSERT_EQ(rd.messages.size(), 1u);
  EXPECT_EQ(rd.messages[0].type, MessageType::kHeartbeatResponse);
  EXPECT_TRUE(rd.messages[0].reject);
  EXPECT_EQ(rd.messages[0].reject_hint, 0u);
}

TEST(LostLogTest, FollowerCatchesUpByAppendsAfterAHeartbeat) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  ProposeMany(net, 1, 5, "c");
  ASSERT_EQ(net.info(1).progress.at(3).match, net.info(1).last_index);
  net.RestartEmpty(3);
  net.Tick(1);  // heartbeat -> refusal -> probe from index 1
  EXPECT_EQ(net.state(3).commands, net.state(1).commands);
  EXPECT_EQ(net.info(3).last_index, net.info(1).last_index);
  EXPECT_EQ(net.info(1).progress.at(3).match, net.info(1).last_index);
  ASSERT_TRUE(net.Propose(1, "after").ok());
  EXPECT_EQ(net.info(1).progress.at(3).state, ProgressState::kReplicate);
  EXPECT_EQ(net.state(3).commands.back(), "after");
}

TEST(LostLogTest, FollowerCatchesUpFromAnAppendRefusalWithoutHeartbeats) {
  // The next append (not a heartbeat) is what it refuses first.
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  ProposeMany(net, 1, 5, "c");
  net.RestartEmpty(3);
  ASSERT_TRUE(net.Propose(1, "after").ok());
  EXPECT_EQ(net.state(3).commands, net.state(1).commands);
  EXPECT_EQ(net.info(1).progress.at(3).match, net.info(1).last_index);
}

TEST(LostLogTest, FollowerCatchesUpBySnapshotWhenTheLogWasCompacted) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  ProposeMany(net, 1, 10, "c");
  ASSERT_TRUE(net.Compact(1).ok());
  net.RestartEmpty(3);
  net.ClearDelivered();
  net.TickAll(2);
  int snapshots = 0;
  for (const auto& m : net.delivered()) snapshots += m.type == MessageType::kSnapshot;
  EXPECT_EQ(snapshots, 1);
  EXPECT_EQ(net.durable(3).snapshot().index, net.durable(1).snapshot().index);
  EXPECT_EQ(net.state(3).commands, net.state(1).commands);
  ASSERT_TRUE(net.Propose(1, "after").ok());
  EXPECT_EQ(net.state(3).commands.back(), "after");
}

TEST(LostLogTest, ReadIndexStillSucceedsWhileAFollowerIsRefusingHeartbeats) {
  // A refused heartbeat still acknowledges the leader's term, so a read
  // that needs that follower for its quorum completes.
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  ProposeMany(net, 1, 3, "c");
  net.RestartEmpty(3);
  net.Isolate(2);
  ASSERT_TRUE(net.node(1).ReadIndex("ctx").ok());
  net.Flush();
  ASSERT_FALSE(net.reads(1).empty());
  EXPECT_EQ(net.reads(1).back().context, "ctx");
}

TEST(ProgressTest, ForgetMatchProbesFromTheFollowersEnd) {
  Progress pr(10, 4);
  pr.MaybeUpdate(9);
  pr.BecomeReplicate();
  pr.SentEntries(12, 3);
  pr.ForgetMatch(0);
  EXPECT_EQ(pr.match, 0u);
  EXPECT_EQ(pr.next, 1u);
  EXPECT_EQ(pr.state, ProgressState::kProbe);
  EXPECT_EQ(pr.inflights.Count(), 0u);
  EXPECT_FALSE(pr.IsPaused());
}

}  // namespace
}  // namespace gpool::raft
