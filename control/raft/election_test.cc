// Leader election: a single winner per term, split votes resolve, pre-vote,
// check-quorum and the leader lease.
#include <gtest/gtest.h>

#include "control/raft/test_network.h"
#include "protocol/model/users.h"

namespace gpool::raft {
namespace {

using testing::TestNetwork;

TEST(ElectionTest, FirstTimeoutElectsExactlyOneLeader) {
  TestNetwork net({1, 2, 3});
  net.TickAll(25);  // past the longest randomized timeout (2 * election_tick)
  int leaders = 0;
  uint64_t term = 0;
  for (uint64_t id : net.ids()) {
    NodeInfo i = net.info(id);
    if (i.role == Role::kLeader) {
      ++leaders;
      term = i.term;
    }
  }
  EXPECT_EQ(leaders, 1);
  for (uint64_t id : net.ids()) {
    EXPECT_EQ(net.info(id).term, term);
    EXPECT_EQ(net.info(id).lead, net.Leader());
  }
}

TEST(ElectionTest, CampaignWinsWithAQuorumAndCommitsAnEmptyEntry) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  NodeInfo i = net.info(1);
  EXPECT_EQ(i.role, Role::kLeader);
  EXPECT_EQ(i.term, 1u);
  EXPECT_EQ(i.commit, 1u);  // the leader's empty entry
  EXPECT_EQ(net.info(2).commit, 1u);
  EXPECT_EQ(net.durable(2).hard_state().vote, 1u);
}

TEST(ElectionTest, CandidateWithoutQuorumDoesNotWin) {
  TestNetwork net({1, 2, 3}, {.pre_vote = false});
  net.Isolate(1);
  net.Campaign(1);
  EXPECT_EQ(net.info(1).role, Role::kCandidate);
  net.Heal();
}

TEST(ElectionTest, SplitVoteResolvesWithRandomizedTimeouts) {
  // Three candidates at once in a 3-node cluster each vote for themselves:
  // each is refused by the other two and nobody wins term 1. Randomized
  // timeouts then break the tie.
  TestNetwork net({1, 2, 3}, {.pre_vote = false});
  for (uint64_t id : {1, 2, 3}) ASSERT_TRUE(net.node(id).Campaign().ok());
  net.Flush();
  for (uint64_t id : {1, 2, 3}) {
    EXPECT_NE(net.info(id).role, Role::kLeader) << id;
    EXPECT_EQ(net.info(id).term, 1u);
    EXPECT_EQ(net.info(id).vote, id);
  }
  EXPECT_EQ(net.Leader(), 0u);
  net.TickAll(40);
  ASSERT_NE(net.Leader(), 0u);
  int leaders = 0;
  for (uint64_t id : {1, 2, 3}) leaders += net.info(id).role == Role::kLeader;
  EXPECT_EQ(leaders, 1);
  EXPECT_GE(net.info(net.Leader()).term, 2u);
}

TEST(ElectionTest, StaleLogCannotWin) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  net.Isolate(3);
  ASSERT_TRUE(net.Propose(1, "x").ok());
  net.Heal();
  // Node 3 lacks entry 2: the others refuse it, even with a higher term.
  net.Isolate(1);
  ASSERT_TRUE(net.node(3).Campaign().ok());
  net.Flush();
  EXPECT_NE(net.info(3).role, Role::kLeader);
  net.Campaign(2);
  EXPECT_EQ(net.info(2).role, Role::kLeader);
}

TEST(ElectionTest, PreVoteKeepsAPartitionedNodeFromInflatingItsTerm) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  const uint64_t term = net.info(1).term;
  net.Isolate(3);
  net.Tick(3, 200);  // many election timeouts alone
  EXPECT_EQ(net.info(3).term, term) << "pre-vote must not bump the term";
  EXPECT_EQ(net.info(3).role, Role::kPreCandidate);
  net.Heal();
  net.TickAll(5);
  EXPECT_EQ(net.Leader(), 1u);
  EXPECT_EQ(net.info(1).term, term) << "the rejoining node must not disrupt the leader";
  EXPECT_EQ(net.info(3).lead, 1u);
}

TEST(ElectionTest, WithoutPreVoteAPartitionedNodeDisruptsOnReturn) {
  // The contrast case: what pre-vote prevents.
  TestNetwork net({1, 2, 3}, {.pre_vote = false, .check_quorum = false});
  net.Campaign(1);
  const uint64_t term = net.info(1).term;
  net.Isolate(3);
  net.Tick(3, 200);
  EXPECT_GT(net.info(3).term, term + 5);
  net.Heal();
  net.TickAll(30);
  EXPECT_GT(net.info(net.Leader()).term, term) << "the leader was deposed by the higher term";
}

TEST(ElectionTest, CheckQuorumMakesAPartitionedLeaderStepDown) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  net.Isolate(1);
  // Within two election timeouts the leader notices no quorum is listening.
  net.Tick(1, 20);
  EXPECT_EQ(net.info(1).role, Role::kFollower);
  EXPECT_EQ(net.info(1).lead, 0u);
  auto p = net.node(1).Propose("late");
  EXPECT_EQ(p.status().code(), StatusCode::kNotLeader);
}

TEST(ElectionTest, WithoutCheckQuorumAPartitionedLeaderStaysLeader) {
  TestNetwork net({1, 2, 3}, {.check_quorum = false});
  net.Campaign(1);
  net.Isolate(1);
  net.Tick(1, 50);
  EXPECT_EQ(net.info(1).role, Role::kLeader);
}

TEST(ElectionTest, LeaderLeaseIgnoresVotesWhileALeaderIsHeard) {
  TestNetwork net({1, 2, 3}, {.pre_vote = false});
  net.Campaign(1);
  const uint64_t term = net.info(1).term;
  // Node 3 campaigns though the leader is fine (say its timer fired early).
  ASSERT_TRUE(net.node(3).Campaign().ok());
  net.Flush();
  EXPECT_EQ(net.info(1).role, Role::kLeader);
  EXPECT_EQ(net.info(1).term, term);
  EXPECT_EQ(net.info(2).term, term);
  // Node 3 is at a higher term; the leader's next append makes it answer
  // with that term, the leader steps down and the cluster converges.
  net.TickAll(40);
  ASSERT_NE(net.Leader(), 0u);
  for (uint64_t id : {1, 2, 3}) EXPECT_EQ(net.info(id).lead, net.Leader());
}

TEST(ElectionTest, StaleCandidateLearnsTheHigherTermFromARejection) {
  // Found by the simulator: a candidate behind in term must hear the higher
  // term from the voters that refuse it, or a node whose (stale)
  // configuration leaves the candidate out can keep both from ever winning.
  TestNetwork net({1, 2, 3}, {.pre_vote = false, .check_quorum = false});
  net.Isolate(3);
  for (int i = 0; i < 3; ++i) net.Campaign(3);
  ASSERT_EQ(net.info(3).term, 3u);
  net.Heal();
  net.Cut(1, 2);
  net.Campaign(1);  // term 1: node 3 refuses, with its term
  EXPECT_EQ(net.info(1).term, 3u);
  EXPECT_EQ(net.info(1).role, Role::kFollower);
  net.Heal();
  net.TickAll(40);
  EXPECT_NE(net.Leader(), 0u);
}

TEST(ElectionTest, NodesOutsideTheConfigurationNeverCampaign) {
  TestNetwork net({1, 2, 3});
  net.AddIdleNode(4);
  net.Tick(4, 100);
  EXPECT_EQ(net.info(4).role, Role::kFollower);
  EXPECT_EQ(net.info(4).term, 0u);
  EXPECT_EQ(net.node(4).Campaign().code(), StatusCode::kFailedPrecondition);
}

TEST(ElectionTest, VotesAreDurableAcrossRestart) {
  TestNetwork net({1, 2, 3}, {.pre_vote = false});
  net.Isolate(2);
  net.Campaign(2);  // votes for itself in term 1; the Ready persists it
  net.Crash(2);
  net.Restart(2);
  EXPECT_EQ(net.info(2).term, 1u);
  EXPECT_EQ(net.info(2).vote, 2u);
  EXPECT_EQ(net.info(2).role, Role::kFollower);
}

TEST(ElectionTest, SingleNodeElectsItselfAndCommits) {
  TestNetwork net({1});
  net.TickAll(25);
  EXPECT_EQ(net.info(1).role, Role::kLeader);
  auto idx = net.Propose(1, "solo");
  ASSERT_TRUE(idx.ok());
  EXPECT_EQ(net.info(1).commit, *idx);
  EXPECT_EQ(net.state(1).commands, std::vector<std::string>{"solo"});
}

}  // namespace
}  // namespace gpool::raft
