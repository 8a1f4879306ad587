// A replica never trusts a peer's numbers into overflow or livelock: frames
// with terms or indexes beyond the bounds are refused, strangers are
// ignored, and a follower that hears a live leader ignores others' higher
// terms. (The probe that motivated it: one frame with term 2^64-1 to each
// replica wedged a 3-replica cluster for good; 50 forged heartbeats caused
// 56 leader changes.)
#include <gtest/gtest.h>

#include <cstdint>

#include "control/raft/test_network.h"
#include "protocol/message_type.h"
#include "protocol/model/users.h"

namespace gpool::raft {
namespace {

using testing::TestNetwork;

Message Forged(MessageType type, uint64_t from, uint64_t to, uint64_t term) {
  Message m;
  m.type = type;
  m.from = from;
  m.to = to;
  m.term = term;
  return m;
}

TEST(HostilePeerTest, AMaximalTermIsRefusedAndTheClusterKeepsElectingAndCommitting) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  const uint64_t term = net.info(1).term;
  for (uint64_t to : {1, 2, 3}) {
    for (uint64_t bad : {UINT64_MAX, UINT64_MAX - 1, kMaxTerm + 1}) {
      for (auto type : {MessageType::kHeartbeat, MessageType::kAppend, MessageType::kVote, MessageType::kPreVote,
                        MessageType::kAppendResponse}) {
        Status s = net.node(to).Step(Forged(type, to == 1 ? 2 : 1, to, bad));
        EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << "term " << bad << " to node " << to;
      }
    }
    EXPECT_EQ(net.info(to).term, term) << "node " << to;
  }
  EXPECT_EQ(net.info(1).role, Role::kLeader);
  ASSERT_TRUE(net.Propose(1, "after").ok());
  net.Flush();
  EXPECT_EQ(net.state(3).commands.back(), "after");
  // A new election still works: no one is stuck near the top of the range.
  net.Crash(1);
  net.TickAll(40);
  const uint64_t leader = net.info(2).role == Role::kLeader ? 2 : 3;
  EXPECT_EQ(net.info(leader).role, Role::kLeader);
  EXPECT_GT(net.info(leader).term, term);
  EXPECT_LE(net.info(leader).term, term + 3);
}

TEST(HostilePeerTest, ATermJumpBeyondTheBoundAndOverflowingIndexesAreRefused) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  const uint64_t term = net.info(2).term;
  EXPECT_FALSE(net.node(2).Step(Forged(MessageType::kVote, 3, 2, term + kMaxTermJump + 1)).ok());
  Message append = Forged(MessageType::kAppend, 1, 2, term);
  append.index = UINT64_MAX;
  append.entries.push_back(LogEntry{0, term, "x"});  // index UINT64_MAX + 1 wraps to 0
  EXPECT_EQ(net.node(2).Step(append).code(), StatusCode::kInvalidArgument);
  Message heartbeat = Forged(MessageType::kHeartbeat, 1, 2, term);
  heartbeat.commit = UINT64_MAX;
  EXPECT_EQ(net.node(2).Step(heartbeat).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(net.info(2).term, term);
}

TEST(HostilePeerTest, MessagesFromOutsideTheConfigurationAreDropped) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  const NodeInfo before = net.info(2);
  Message append = Forged(MessageType::kAppend, 9, 2, before.term + 1);
  append.index = before.last_index;
  append.log_term = before.term;
  append.entries.push_back(LogEntry{before.last_index + 1, before.term + 1, "forged"});
  EXPECT_TRUE(net.node(2).Step(append).ok());
  EXPECT_TRUE(net.node(2).Step(Forged(MessageType::kVote, 9, 2, before.term + 5)).ok());
  const NodeInfo after = net.info(2);
  EXPECT_EQ(after.term, before.term);
  EXPECT_EQ(after.last_index, before.last_index);
  EXPECT_EQ(after.lead, 1u);
  EXPECT_EQ(after.dropped_messages, before.dropped_messages + 2);
}

TEST(HostilePeerTest, AFollowerHearingALiveLeaderIgnoresOthersHigherTermHeartbeats) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  const uint64_t term = net.info(1).term;
  // Fifty heartbeats under node 3's name with ordinary, higher terms.
  for (int i = 1; i <= 50; ++i) {
    for (uint64_t to : {1, 2}) net.Inject(Forged(MessageType::kHeartbeat, 3, to, term + static_cast<uint64_t>(i)));
    net.Flush();
  }
  EXPECT_EQ(net.info(1).role, Role::kLeader) << "the leader was deposed by forged heartbeats";
  EXPECT_EQ(net.info(1).term, term);
  EXPECT_EQ(net.info(2).lead, 1u);
  ASSERT_TRUE(net.Propose(1, "still-leading").ok());
  net.Flush();
  EXPECT_EQ(net.state(2).commands.back(), "still-leading");
}

// Issue 48, finding 9: one forged AppendResponse with a term 2^32 above the
// leader's used to depose it and lift the term by 2^32.
TEST(HostilePeerTest, AnAnswersTermAboveTheAnswerBoundIsRefusedAndTheLeaderKeepsLeading) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  const uint64_t term = net.info(1).term;
  for (auto type : {MessageType::kAppendResponse, MessageType::kHeartbeatResponse, MessageType::kVoteResponse,
                    MessageType::kPreVoteResponse}) {
    for (uint64_t jump : {kMaxTermJump, kMaxAnswerTermJump + 1}) {
      Message m = Forged(type, 2, 1, term + jump);
      m.reject = type == MessageType::kPreVoteResponse;  // a grant never changes the term
      Status s = net.node(1).Step(m);
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << MessageTypeName(type) << " +" << jump;
    }
  }
  EXPECT_EQ(net.info(1).role, Role::kLeader);
  EXPECT_EQ(net.info(1).term, term);
  ASSERT_TRUE(net.Propose(1, "still-leading").ok());
  net.Flush();
  EXPECT_EQ(net.state(3).commands.back(), "still-leading");
}

TEST(HostilePeerTest, AHigherTermAnswerFromALearnerIsDroppedButFromAVoterWithinTheBoundItDeposes) {
  TestNetwork net({1, 2, 3, 4});
  net.Campaign(1);
  ASSERT_TRUE(net.node(1).ProposeConfChange({ConfChangeType::kRemoveVoter, 4, ""}).ok());
  net.Flush();
  ASSERT_TRUE(net.node(1).ProposeConfChange({ConfChangeType::kAddLearner, 4, ""}).ok());
  net.Flush();
  ASSERT_EQ(net.info(1).learners, (std::vector<uint64_t>{4}));
  const NodeInfo before = net.info(1);
  // A learner holds a replica key too, but never votes: its higher term is
  // nothing the leader must learn.
  EXPECT_TRUE(net.node(1).Step(Forged(MessageType::kAppendResponse, 4, 1, before.term + 7)).ok());
  EXPECT_EQ(net.info(1).role, Role::kLeader);
  EXPECT_EQ(net.info(1).term, before.term);
  EXPECT_EQ(net.info(1).dropped_messages, before.dropped_messages + 1);
  // A voter's answer within the bound is honest Raft (a newer leader's
  // voter answering the old one): the leader adopts the term and steps down.
  EXPECT_TRUE(net.node(1).Step(Forged(MessageType::kAppendResponse, 2, 1, before.term + kMaxAnswerTermJump)).ok());
  EXPECT_EQ(net.info(1).role, Role::kFollower);
  EXPECT_EQ(net.info(1).term, before.term + kMaxAnswerTermJump);
}

TEST(HostilePeerTest, ASecondLeaderOfTheSameTermIsRefused) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  const NodeInfo before = net.info(2);
  Message append = Forged(MessageType::kAppend, 3, 2, before.term);
  append.index = before.last_index;
  append.log_term = before.term;
  append.entries.push_back(LogEntry{before.last_index + 1, before.term, "forged"});
  EXPECT_EQ(net.node(2).Step(append).code(), StatusCode::kInternal);
  EXPECT_EQ(net.info(2).last_index, before.last_index);
}

}  // namespace
}  // namespace gpool::raft
