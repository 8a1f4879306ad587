#include "control/http/readiness.h"

#include <gtest/gtest.h>

namespace gpool::control {
namespace {

ReadinessInput Follower() {
  ReadinessInput in;
  in.replicated = true;
  in.role = "follower";
  in.voter = true;
  in.leader_id = 1;
  in.commit_index = 40;
  in.applied_index = 40;
  return in;
}

std::string Why(const ReadinessInput& in) {
  Status s = CheckReadiness(in);
  EXPECT_EQ(s.code(), s.ok() ? StatusCode::kOk : StatusCode::kUnavailable);
  return s.ok() ? "ready" : s.message();
}

TEST(ReadinessTest, ASingleCoordinatorIsReadyOnceItServes) {
  ReadinessInput in;
  in.role = "leader";
  EXPECT_EQ(Why(in), "not serving yet");
  in.serving = true;
  EXPECT_EQ(Why(in), "ready");
}

TEST(ReadinessTest, TheLeaderIsReadyOnlyOnceItServesItsTerm) {
  ReadinessInput in = Follower();
  in.role = "leader";
  in.leader_id = 2;
  EXPECT_NE(Why(in).find("not yet applied an entry of its term"), std::string::npos);
  in.serving = true;
  EXPECT_EQ(Why(in), "ready");
}

TEST(ReadinessTest, AFollowerIsReadyAsAVoterThatKnowsALeaderAndHasAppliedWhatCommitted) {
  EXPECT_EQ(Why(Follower()), "ready");

  ReadinessInput learner = Follower();
  learner.voter = false;
  EXPECT_NE(Why(learner).find("not a voting member"), std::string::npos);

  ReadinessInput leaderless = Follower();
  leaderless.leader_id = 0;
  leaderless.role = "candidate";
  EXPECT_EQ(Why(leaderless), "knows no leader (role candidate: an election, or quorum lost)");

  ReadinessInput behind = Follower();
  behind.applied_index = 39;
  EXPECT_EQ(Why(behind), "applied 39 of the 40 entries it knows committed");
}

TEST(ReadinessTest, ARemovedReplicaIsNeverReady) {
  ReadinessInput in = Follower();
  in.removed = true;
  EXPECT_EQ(Why(in), "this replica was removed from the replica set");
  in.role = "leader";
  in.serving = true;
  EXPECT_EQ(Why(in), "this replica was removed from the replica set");
}

}  // namespace
}  // namespace gpool::control
