#include "control/replication/membership_guard.h"
#include "protocol/model/users.h"

#include <gtest/gtest.h>

namespace gpool::replication {
namespace {

raft::NodeInfo Leader(std::vector<uint64_t> voters, std::vector<uint64_t> learners = {}) {
  raft::NodeInfo info;
  info.id = 1;
  info.role = raft::Role::kLeader;
  info.commit = 100;
  info.voters = std::move(voters);
  info.learners = std::move(learners);
  return info;
}

TEST(MembershipGuardTest, RemovingAVoterIsRefusedWhenTooFewLiveVotersWouldRemain) {
  MembershipGuard guard(1000);
  guard.Heard(2, 5000);  // 3 has not been heard from
  const raft::NodeInfo leader = Leader({1, 2, 3});
  Status refused = guard.CheckRemoval(leader, 2, /*force=*/false, 5500);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("not heard from lately: 3"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("--force"), std::string::npos);
  EXPECT_TRUE(guard.CheckRemoval(leader, 2, /*force=*/true, 5500).ok()) << "an operator may insist";
  EXPECT_TRUE(guard.CheckRemoval(leader, 3, false, 5500).ok()) << "removing the silent one leaves 1 and 2 live";
  // Heard again, 3 is live: removing 2 leaves two live voters of two.
  guard.Heard(3, 5400);
  EXPECT_TRUE(guard.CheckRemoval(leader, 2, false, 5500).ok());
  // Silence longer than the window makes a replica not live again.
  EXPECT_FALSE(guard.CheckRemoval(leader, 2, false, 6500).ok());
}

TEST(MembershipGuardTest, RemovingALearnerNeverRisksTheQuorum) {
  MembershipGuard guard(1000);
  EXPECT_TRUE(guard.CheckRemoval(Leader({1, 2, 3}, {4}), 4, false, 10).ok());
}

TEST(MembershipGuardTest, ALearnerIsPromotedOnlyOnceCaughtUpAndLive) {
  MembershipGuard guard(1000);
  raft::NodeInfo leader = Leader({1, 2, 3}, {4});
  leader.progress[4].match = 99;
  guard.Heard(4, 1000);
  EXPECT_FALSE(guard.LearnerToPromote(leader, 1100).has_value()) << "one committed entry short";
  leader.progress[4].match = 100;
  EXPECT_EQ(guard.LearnerToPromote(leader, 1100), std::optional<uint64_t>(4));
  EXPECT_FALSE(guard.LearnerToPromote(leader, 5000).has_value()) << "caught up but silent since";
  leader.role = raft::Role::kFollower;
  EXPECT_FALSE(guard.LearnerToPromote(leader, 1100).has_value()) << "only a leader promotes";
}

// A leader stopping on SIGTERM hands over to the live voter with the most of
// its log (issue 49): the transfer then needs the least catching up.
TEST(MembershipGuardTest, AStoppingLeaderHandsOverToTheLiveVoterWithTheMostOfTheLog) {
  MembershipGuard guard(1000);
  raft::NodeInfo leader = Leader({1, 2, 3, 4, 5}, {6});
  leader.progress[2].match = 90;
  leader.progress[3].match = 100;  // the most of the log, but silent
  leader.progress[4].match = 95;
  leader.progress[5].match = 95;
  leader.progress[6].match = 100;  // a learner: it may not lead
  for (uint64_t r : {2, 4, 5, 6}) guard.Heard(r, 1000);
  EXPECT_EQ(guard.HandOverTarget(leader, 1100), std::optional<uint64_t>(4)) << "live, 95, the lower id of 4 and 5";
  guard.Heard(3, 1050);
  EXPECT_EQ(guard.HandOverTarget(leader, 1100), std::optional<uint64_t>(3)) << "3 is live again and holds 100";
  EXPECT_FALSE(guard.HandOverTarget(leader, 5000).has_value()) << "nobody heard within the window";
  EXPECT_FALSE(guard.HandOverTarget(Leader({1}), 1100).has_value()) << "a single voter has nobody to hand to";
  leader.role = raft::Role::kFollower;
  EXPECT_FALSE(guard.HandOverTarget(leader, 1100).has_value()) << "only a leader hands over";
}

}  // namespace
}  // namespace gpool::replication
