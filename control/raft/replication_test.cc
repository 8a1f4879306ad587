// Log replication: commit, log matching and conflict overwrite, fast
// backtracking, current-term commitment (Figure 8), batching, pipelining.
#include <gtest/gtest.h>

#include "control/raft/test_network.h"
#include "protocol/message_type.h"
#include "protocol/model/users.h"

namespace gpool::raft {
namespace {

using testing::TestNetwork;

std::vector<std::string> Commands(std::initializer_list<const char*> list) {
  return std::vector<std::string>(list.begin(), list.end());
}

// Campaigns until `id` leads (a first try can lose to votes already cast
// in the next term).
void CampaignUntilLeader(TestNetwork& net, uint64_t id) {
  for (int i = 0; i < 3 && net.info(id).role != Role::kLeader; ++i) net.Campaign(id);
  ASSERT_EQ(net.info(id).role, Role::kLeader);
}

// Both in-memory logs agree entry by entry over [from, to].
void ExpectSameLog(TestNetwork& net, uint64_t a, uint64_t b) {
  const RaftLog& la = net.node(a).log();
  const RaftLog& lb = net.node(b).log();
  ASSERT_EQ(la.last_index(), lb.last_index());
  for (uint64_t i = std::max(la.first_index(), lb.first_index()); i <= la.last_index(); ++i) {
    ASSERT_EQ(*la.At(i), *lb.At(i)) << "index " << i;
  }
}

TEST(ReplicationTest, CommitsAndAppliesInOrderEverywhere) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  for (const char* c : {"a", "b", "c"}) ASSERT_TRUE(net.Propose(1, c).ok());
  for (uint64_t id : {1, 2, 3}) {
    EXPECT_EQ(net.state(id).commands, Commands({"a", "b", "c"})) << id;
    EXPECT_EQ(net.info(id).commit, 4u);
  }
}

TEST(ReplicationTest, ProposeOnAFollowerNamesTheLeader) {
  TestNetwork net({1, 2, 3});
  net.Campaign(2);
  auto r = net.node(1).Propose("x");
  ASSERT_EQ(r.status().code(), StatusCode::kNotLeader);
  EXPECT_NE(r.status().message().find("leader is node 2"), std::string::npos) << r.status().message();
  auto no_leader = TestNetwork({1, 2, 3}).node(1).Propose("x");
  EXPECT_EQ(no_leader.status().code(), StatusCode::kNotLeader);
}

TEST(ReplicationTest, ConflictingSuffixIsOverwritten) {
  TestNetwork net({1, 2, 3}, {.pre_vote = false, .check_quorum = false});
  net.Campaign(1);
  net.Isolate(1);
  ASSERT_TRUE(net.Propose(1, "lost1").ok());  // indexes 2, 3 in term 1, only on node 1
  ASSERT_TRUE(net.Propose(1, "lost2").ok());
  net.Heal();
  net.Isolate(1);
  net.Campaign(2);  // term 2 with node 3
  ASSERT_TRUE(net.Propose(2, "kept").ok());
  net.Heal();
  net.TickAll(2);  // the new leader's heartbeat reaches node 1
  EXPECT_EQ(net.info(1).lead, 2u);
  ExpectSameLog(net, 1, 2);
  ExpectSameLog(net, 2, 3);
  EXPECT_EQ(net.state(1).commands, Commands({"kept"}));
  // The durable copy was rewritten too.
  EXPECT_EQ(net.durable(1).entries(), net.durable(2).entries());
}

TEST(ReplicationTest, FastBacktrackingSkipsAConflictingTermInOneRoundTrip) {
  TestNetwork net({1, 2, 3}, {.pre_vote = false, .check_quorum = false});
  net.Campaign(1);
  net.Isolate(1);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(net.node(1).Propose("old").ok());
  net.Flush();
  net.Heal();
  net.Isolate(1);
  net.Campaign(2);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(net.node(2).Propose("new").ok());
  net.Flush();
  net.Heal();
  net.ClearDelivered();
  net.TickAll(1);
  int rejects = 0;
  for (const Message& m : net.delivered()) {
    rejects += m.type == MessageType::kAppendResponse && m.reject && m.from == 1;
  }
  EXPECT_LE(rejects, 2) << "one reject per conflicting term, not one per entry";
  ExpectSameLog(net, 1, 2);
}

TEST(ReplicationTest, Figure8OldTermEntryIsNotCommittedByCounting) {
  // Paper Figure 8: a leader must not count replicas of an entry from an
  // earlier term, because a later leader may still overwrite it.
  TestNetwork net({1, 2, 3, 4, 5}, {.pre_vote = false, .check_quorum = false, .max_msg_entries = 1});
  net.Campaign(1);  // term 1; index 1 committed everywhere
  for (uint64_t other : {3, 4, 5}) net.Cut(1, other);
  ASSERT_TRUE(net.Propose(1, "old").ok());  // index 2, term 1: on nodes 1 and 2 only
  net.Crash(1);  // node 1 stops leading; its durable log keeps "old"
  net.Restart(1);
  net.Heal();
  net.Isolate(1);
  // Node 5 wins term 2 (votes from 3, 4), appends index 2 in term 2 alone.
  net.DropIf([](const Message& m) { return m.from == 5 && m.type == MessageType::kAppend; });
  net.Campaign(5);
  ASSERT_EQ(net.info(5).role, Role::kLeader);
  net.Crash(5);  // keeps its durable log: index 2 in term 2
  net.Restart(5);
  net.Heal();
  net.Isolate(5);
  // Node 1 wins term 3 (votes 2, 3, 4); none of its appends get out, so its
  // own term-3 entry (index 3) stays on node 1 alone.
  net.DropIf([](const Message& m) {
    return m.from == 5 || m.to == 5 || (m.from == 1 && m.type == MessageType::kAppend);
  });
  CampaignUntilLeader(net, 1);
  EXPECT_EQ(net.info(1).term, 3u);
  // Nodes 2 and 3 report holding index 2 ("old", term 1): with the leader
  // that is a majority of the five, yet it must not commit by counting.
  for (uint64_t from : {2, 3}) {
    net.Inject({.type = MessageType::kAppendResponse, .from = from, .to = 1, .term = 3, .index = 2});
  }
  net.Flush();
  EXPECT_EQ(net.info(1).progress.at(3).match, 2u);
  EXPECT_EQ(net.info(1).progress.at(2).match, 2u);
  EXPECT_EQ(net.info(1).commit, 1u) << "an entry of term 1 must not commit by counting in term 3";
  // If node 1 fails now, node 5 (last term 2) can win and overwrite index 2:
  // exactly why it was not committed.
  net.Heal();
  net.Isolate(1);
  CampaignUntilLeader(net, 5);
  net.Heal();
  net.TickAll(3);
  for (uint64_t id : {1, 2, 3, 4, 5}) {
    EXPECT_TRUE(net.state(id).commands.empty()) << "node " << id << " applied the overwritten entry";
    EXPECT_EQ(net.node(id).log().Term(2), 2u) << id;
  }
}

TEST(ReplicationTest, Figure8OldEntryCommitsWithACurrentTermEntry) {
  TestNetwork net({1, 2, 3, 4, 5}, {.pre_vote = false, .check_quorum = false});
  net.Campaign(1);
  for (uint64_t other : {3, 4, 5}) net.Cut(1, other);
  ASSERT_TRUE(net.Propose(1, "old").ok());
  net.Heal();
  net.Isolate(1);
  net.Campaign(2);  // term 2; node 2 holds "old" and replicates it with its own entry
  net.TickAll(1);
  EXPECT_EQ(net.info(2).commit, 3u);
  EXPECT_EQ(net.state(3).commands, Commands({"old"}));
}

TEST(ReplicationTest, BatchingRespectsEntryAndByteLimits) {
  TestNetwork net({1, 2}, {.max_msg_entries = 3, .max_msg_bytes = 2500});
  net.Campaign(1);
  net.Isolate(2);
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(net.node(1).Propose(std::string(10, 'x')).ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(net.node(1).Propose(std::string(1000, 'y')).ok());
  net.Flush();
  net.Heal();
  net.ClearDelivered();
  net.TickAll(1);
  size_t appends = 0;
  for (const Message& m : net.delivered()) {
    if (m.type != MessageType::kAppend || m.entries.empty()) continue;
    ++appends;
    EXPECT_LE(m.entries.size(), 3u);
    uint64_t bytes = 0;
    for (const auto& e : m.entries) bytes += e.ByteSize();
    EXPECT_TRUE(m.entries.size() == 1 || bytes <= 2500) << bytes;
  }
  EXPECT_GE(appends, 5u);
  EXPECT_EQ(net.info(2).commit, 14u);
}

TEST(ReplicationTest, PipelinesAppendsUpToTheInflightWindow) {
  TestNetwork net({1, 2}, {.max_inflight = 3});
  net.Campaign(1);
  ASSERT_EQ(net.info(1).progress.at(2).state, ProgressState::kReplicate);
  // Five proposals without delivering anything: the leader sends optimistically.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(net.node(1).Propose("p").ok());
  ProgressInfo p = net.info(1).progress.at(2);
  EXPECT_EQ(p.inflight, 3u) << "window full";
  EXPECT_EQ(p.next, 5u) << "next moved ahead of match without acknowledgements";
  EXPECT_EQ(p.match, 1u);
  net.Flush();
  p = net.info(1).progress.at(2);
  EXPECT_EQ(p.match, 6u);
  EXPECT_EQ(p.inflight, 0u);
  EXPECT_EQ(net.info(2).commit, 6u);
}

// Proposals faster than a quorum commits them: the leader refuses new ones
// past max_uncommitted_bytes (busy, retry), instead of growing its log in
// memory without bound, and admits them again as the backlog commits.
TEST(ReplicationTest, TheLeaderRefusesProposalsPastTheUncommittedBound) {
  TestNetwork net({1, 2, 3}, {.max_uncommitted_bytes = 1000});
  net.Campaign(1);
  net.Isolate(2);
  net.Isolate(3);  // no quorum: nothing commits
  const std::string command(300, 'c');
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(net.node(1).Propose(command).ok()) << i;
  auto refused = net.node(1).Propose(command);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("busy"), std::string::npos) << refused.status().ToString();
  EXPECT_TRUE(net.node(1).Propose("small").ok()) << "what fits under the bound still goes";
  EXPECT_FALSE(net.node(1).Propose(std::string(100, 'y')).ok()) << "905 + 100 bytes would pass 1000";

  net.Heal();
  net.TickAll(3);
  EXPECT_EQ(net.state(2).commands.size(), 4u) << "the admitted ones commit";
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(net.Propose(1, command).ok()) << "committed: room again, " << i;

  // One proposal larger than the bound is admitted when nothing waits.
  EXPECT_TRUE(net.Propose(1, std::string(5000, 'L')).ok());
}

TEST(ReplicationTest, LostAppendsAreRecoveredByHeartbeats) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  net.DropIf([](const Message& m) { return m.to == 3 && m.type == MessageType::kAppend; });
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(net.Propose(1, "p").ok());
  EXPECT_EQ(net.info(3).commit, 1u);
  net.Heal();
  net.TickAll(3);
  EXPECT_EQ(net.info(3).commit, 6u);
  EXPECT_EQ(net.state(3).commands.size(), 5u);
}

TEST(ReplicationTest, RestartReappliesCommittedEntriesFromTheDurableLog) {
  TestNetwork net({1, 2, 3});
  net.Campaign(1);
  for (const char* c : {"a", "b"}) ASSERT_TRUE(net.Propose(1, c).ok());
  net.Crash(2);
  net.Restart(2);
  EXPECT_EQ(net.info(2).commit, 3u);
  EXPECT_EQ(net.state(2).commands, Commands({"a", "b"}));
  ASSERT_TRUE(net.Propose(1, "c").ok());
  EXPECT_EQ(net.state(2).commands, Commands({"a", "b", "c"}));
}

TEST(ReplicationTest, StepRejectsMalformedAppends) {
  TestNetwork net({1, 2});
  Message m{.type = MessageType::kAppend, .from = 2, .to = 1, .term = 1, .log_term = 0, .index = 0};
  m.entries = {LogEntry{2, 1, ""}};  // should start at index 1
  EXPECT_EQ(net.node(1).Step(m).code(), StatusCode::kInvalidArgument);
  m.to = 7;
  EXPECT_EQ(net.node(1).Step(m).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpool::raft
