// Learners (etcd's, thesis 4.2.1): a new member first replicates without a
// vote, so adding a replica that is slow, or never answers, cannot cost the
// cluster its majority; it is promoted once it has caught up.
#include <gtest/gtest.h>

#include "control/raft/test_network.h"
#include "protocol/model/users.h"

namespace gpool::raft {
namespace {

using testing::TestNetwork;
using Ids = std::vector<uint64_t>;

ConfChange AddLearner(uint64_t id) { return {ConfChangeType::kAddLearner, id, ""}; }
ConfChange Promote(uint64_t id) { return {ConfChangeType::kAddVoter, id, ""}; }
ConfChange RemoveMember(uint64_t id) { return {ConfChangeType::kRemoveVoter, id, ""}; }

TEST(LearnerTest, ALearnerReplicatesButNeitherVotesNorCountsInTheQuorum) {
  TestNetwork net({1, 2, 3});
  net.AddIdleNode(4);
  net.Campaign(1);
  ASSERT_TRUE(net.Propose(1, "before").ok());
  ASSERT_TRUE(net.node(1).ProposeConfChange(AddLearner(4)).ok());
  net.Flush();
  for (uint64_t id : {1, 2, 3, 4}) {
    EXPECT_EQ(net.info(id).voters, (Ids{1, 2, 3})) << id;
    EXPECT_EQ(net.info(id).learners, (Ids{4})) << id;
  }
  EXPECT_EQ(net.state(4).commands, std::vector<std::string>{"before"}) << "a learner gets the log";
  // The quorum is still two of {1, 2, 3}: node 4 cannot stand in for them.
  net.Isolate(2);
  net.Isolate(3);
  auto p = net.Propose(1, "needs-a-voter");
  ASSERT_TRUE(p.ok());
  net.TickAll(2);
  EXPECT_LT(net.info(1).commit, *p) << "a learner's acknowledgement must not count";
  net.Heal();
  net.TickAll(2);
  EXPECT_EQ(net.info(1).commit, *p);
}

TEST(LearnerTest, AnUnreachableLearnerLeavesTheMajorityAsItWas) {
  TestNetwork net({1, 2, 3});
  net.AddIdleNode(4);
  net.Campaign(1);
  net.Isolate(4);  // an address that never answers
  ASSERT_TRUE(net.node(1).ProposeConfChange(AddLearner(4)).ok());
  net.Flush();
  net.Crash(3);  // one voter down: two of three still commit
  auto p = net.Propose(1, "with-one-voter-down");
  ASSERT_TRUE(p.ok());
  net.TickAll(2);
  EXPECT_EQ(net.info(1).commit, *p);
  // And the learner can be removed again without a quorum problem.
  ASSERT_TRUE(net.node(1).ProposeConfChange(RemoveMember(4)).ok());
  net.TickAll(2);
  EXPECT_TRUE(net.info(1).learners.empty());
}

TEST(LearnerTest, ALearnerNeverCampaignsAndIsPromotedToAVoter) {
  TestNetwork net({1, 2, 3});
  net.AddIdleNode(4);
  net.Campaign(1);
  ASSERT_TRUE(net.node(1).ProposeConfChange(AddLearner(4)).ok());
  net.Flush();
  EXPECT_EQ(net.node(4).Campaign().code(), StatusCode::kFailedPrecondition);
  net.Tick(4, 100);
  EXPECT_NE(net.info(4).role, Role::kCandidate);
  EXPECT_NE(net.info(4).role, Role::kPreCandidate);
  EXPECT_EQ(net.info(1).role, Role::kLeader);
  EXPECT_EQ(net.node(1).TransferLeadership(4).code(), StatusCode::kInvalidArgument) << "only to a voter";
  ASSERT_TRUE(net.node(1).ProposeConfChange(Promote(4)).ok());
  net.Flush();
  for (uint64_t id : {1, 2, 3, 4}) {
    EXPECT_EQ(net.info(id).voters, (Ids{1, 2, 3, 4})) << id;
    EXPECT_TRUE(net.info(id).learners.empty()) << id;
  }
  EXPECT_TRUE(net.node(1).TransferLeadership(4).ok());
  net.Flush();
  EXPECT_EQ(net.info(4).role, Role::kLeader) << "a promoted learner is a full voter";
}

TEST(LearnerTest, DuplicateAndUnknownChangesAreRefusedWithTypedErrors) {
  TestNetwork net({1, 2, 3});
  net.AddIdleNode(4);
  net.Campaign(1);
  ASSERT_TRUE(net.node(1).ProposeConfChange(AddLearner(4)).ok());
  net.Flush();
  EXPECT_EQ(net.node(1).ProposeConfChange(AddLearner(4)).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(net.node(1).ProposeConfChange(AddLearner(2)).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(net.node(1).ProposeConfChange(RemoveMember(9)).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpool::raft
