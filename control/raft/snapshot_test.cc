// Snapshots: compaction, InstallSnapshot for a follower whose next entry was
// compacted, restart from snapshot plus log tail, a lost snapshot resent.
#include <gtest/gtest.h>

#include "control/raft/test_network.h"
#include "protocol/message_type.h"

namespace gpool::raft {
namespace {

using testing::TestNetwork;

// A 3-node cluster where node 3 missed ten commands that the leader then
// compacted away.
void BuildLaggingFollower(TestNetwork& net) {
  net.Campaign(1);
  net.Isolate(3);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(net.Propose(1, "c" + std::to_string(i)).ok());
  auto snap = net.Compact(1);
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  EXPECT_EQ(snap->index, 11u);
  EXPECT_EQ(snap->term, 1u);
  EXPECT_EQ(snap->conf.voters, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(net.node(1).log().first_index(), 12u);
}

TEST(SnapshotTest, LaggingFollowerIsSentASnapshotAndCatchesUp) {
  TestNetwork net({1, 2, 3});
  BuildLaggingFollower(net);
  net.Heal();
  net.ClearDelivered();
  net.TickAll(3);
  int snapshots = 0;
  for (const auto& m : net.delivered()) snapshots += m.type == MessageType::kSnapshot;
  EXPECT_EQ(snapshots, 1);
  EXPECT_EQ(net.info(3).snapshot_index, 11u);
  EXPECT_EQ(net.durable(3).snapshot().index, 11u);
  EXPECT_EQ(net.state(3).commands.size(), 10u);
  ASSERT_TRUE(net.Propose(1, "after").ok());
  EXPECT_EQ(net.info(1).progress.at(3).state, ProgressState::kReplicate);
  EXPECT_EQ(net.state(3).commands.back(), "after");
  EXPECT_EQ(net.state(3).commands, net.state(1).commands);
}

TEST(SnapshotTest, RestartFromSnapshotPlusTail) {
  TestNetwork net({1, 2, 3});
  BuildLaggingFollower(net);
  net.Heal();
  ASSERT_TRUE(net.Propose(1, "tail").ok());
  ASSERT_TRUE(net.Compact(2).ok());
  ASSERT_TRUE(net.Propose(1, "tail2").ok());
  const auto before = net.state(2).commands;
  net.Crash(2);
  net.Restart(2);
  EXPECT_EQ(net.info(2).snapshot_index, 12u);
  EXPECT_EQ(net.state(2).commands, before);
  EXPECT_EQ(net.info(2).applied, 13u);
}

TEST(SnapshotTest, LostSnapshotIsSentAgain) {
  TestNetwork net({1, 2, 3});
  BuildLaggingFollower(net);
  net.Heal();
  net.DropIf([](const Message& m) { return m.type == MessageType::kSnapshot; });
  net.TickAll(5);
  EXPECT_EQ(net.info(1).progress.at(3).state, ProgressState::kSnapshot);
  EXPECT_EQ(net.info(3).snapshot_index, 0u);
  net.Heal();
  net.TickAll(30);  // the leader gives up waiting after two election timeouts
  EXPECT_EQ(net.info(3).snapshot_index, 11u);
  EXPECT_EQ(net.state(3).commands.size(), 10u);
}

TEST(SnapshotTest, CompactChecksItsIndex) {
  TestNetwork net({1});
  net.TickAll(25);
  ASSERT_TRUE(net.Propose(1, "a").ok());
  EXPECT_EQ(net.node(1).Compact(5, "").status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(net.node(1).Compact(1, "").ok());
  EXPECT_EQ(net.node(1).Compact(1, "").status().code(), StatusCode::kFailedPrecondition);
}

TEST(SnapshotTest, FollowerAlreadyHoldingTheEntriesJustCommits) {
  // A snapshot for entries the follower has (same index and term) keeps its
  // log and only raises the commit index.
  TestNetwork net({1, 2});
  net.Campaign(1);
  ASSERT_TRUE(net.Propose(1, "a").ok());
  const uint64_t last = net.info(2).last_index;
  Message m{.type = MessageType::kSnapshot, .from = 1, .to = 2, .term = net.info(1).term};
  m.snapshot = Snapshot{last, net.info(1).term, ConfState{{1, 2}}, "ignored"};
  // Lower the follower's view: deliver before it learned the commit index.
  EXPECT_TRUE(net.node(2).Step(m).ok());
  net.Flush();
  EXPECT_EQ(net.info(2).snapshot_index, 0u) << "no restore needed";
  EXPECT_EQ(net.info(2).commit, last);
}

}  // namespace
}  // namespace gpool::raft
