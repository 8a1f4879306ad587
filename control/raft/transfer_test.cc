// Leader transfer: TimeoutNow to an up-to-date follower, catch-up first for a
// lagging one, proposals refused meanwhile, abandoned after a timeout.
#include <gtest/gtest.h>

#include "control/raft/test_network.h"
#include "protocol/message_type.h"
#include "protocol/model/users.h"

namespace gpool::raft {
namespace {

using testing::TestNetwork;

TEST(TransferTest, UpToDateFollowerTakesOverAtOnce) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  const uint64_t term = net.info(1).term;
  ASSERT_TRUE(net.node(1).TransferLeadership(2).ok());
  net.Flush();
  EXPECT_EQ(net.info(2).role, Role::kLeader);
  EXPECT_EQ(net.info(2).term, term + 1);
  EXPECT_EQ(net.info(1).role, Role::kFollower);
  EXPECT_EQ(net.info(1).lead, 2u);
  // The forced election passes the leader lease (check-quorum is on).
  EXPECT_EQ(net.info(3).lead, 2u);
}

TEST(TransferTest, LaggingFollowerCatchesUpFirst) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  net.DropIf([](const Message& m) { return m.to == 3 && m.type == MessageType::kAppend; });
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(net.Propose(1, "p").ok());
  net.Heal();
  ASSERT_LT(net.info(1).progress.at(3).match, net.info(1).last_index);
  ASSERT_TRUE(net.node(1).TransferLeadership(3).ok());
  net.Flush();
  EXPECT_EQ(net.info(3).role, Role::kLeader);
  EXPECT_EQ(net.state(3).commands.size(), 5u);
}

TEST(TransferTest, ProposalsAreRefusedWhileTransferring) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  net.Isolate(2);
  ASSERT_TRUE(net.node(1).TransferLeadership(2).ok());
  net.Flush();
  EXPECT_EQ(net.node(1).Propose("x").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(net.info(1).lead_transferee, 2u);
}

TEST(TransferTest, TransferIsAbandonedAfterAnElectionTimeout) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  net.Isolate(2);
  ASSERT_TRUE(net.node(1).TransferLeadership(2).ok());
  net.TickAll(10);
  EXPECT_EQ(net.info(1).role, Role::kLeader);
  EXPECT_EQ(net.info(1).lead_transferee, 0u);
  EXPECT_TRUE(net.Propose(1, "x").ok());
}

TEST(TransferTest, RejectsBadTargets) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  EXPECT_EQ(net.node(1).TransferLeadership(9).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(net.node(1).TransferLeadership(1).ok());  // already there
  EXPECT_EQ(net.node(2).TransferLeadership(3).code(), StatusCode::kNotLeader);
}

}  // namespace
}  // namespace gpool::raft
