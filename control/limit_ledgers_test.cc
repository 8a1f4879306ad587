// The issue 48 ledgers alone: ExecStreams, InflightRequests and
// ConnectionLedger each open, refuse with ResourceExhausted naming their
// flag, free on close / answer / expiry, and leave exempt callers alone.
#include <string>

#include <gtest/gtest.h>

#include "control/connection_ledger.h"
#include "control/gateway/exec_streams.h"
#include "control/gateway/inflight_requests.h"

namespace gpool::control {
namespace {

bool NamesLimit(const Status& status, const std::string& flag) {
  return status.code() == StatusCode::kResourceExhausted && status.message().find(flag) != std::string::npos;
}

TEST(ExecStreamsTest, AUserOpensUpToTheLimitAndAnEndedStreamFreesItsSlot) {
  ExecStreams streams(2, /*grace_ms=*/0);
  ASSERT_TRUE(streams.Reserve("alice").ok());
  streams.Started("alice", "n1", 1, 5000, 0);
  ASSERT_TRUE(streams.Reserve("alice").ok());  // a start still waiting for its worker holds a slot too
  Status third = streams.Reserve("alice");
  EXPECT_TRUE(NamesLimit(third, "--max-exec-streams-per-user 2")) << third.ToString();
  EXPECT_NE(third.message().find("alice has 2 exec streams open"), std::string::npos) << third.ToString();
  EXPECT_TRUE(streams.Reserve("bob").ok());  // another user's slots are his own
  streams.Release("alice");                   // the waiting start failed
  ASSERT_TRUE(streams.Reserve("alice").ok());
  streams.Started("alice", "n1", 2, 5000, 0);
  EXPECT_EQ(streams.held("alice"), 2u);
  streams.Ended("n1", 1);
  EXPECT_EQ(streams.held("alice"), 1u);
  EXPECT_TRUE(streams.Reserve("alice").ok());
}

TEST(ExecStreamsTest, ARetriedStartCountsOnceAndAnUnpolledStreamRunsOutWithItsLease) {
  ExecStreams streams(3, /*grace_ms=*/100);
  ASSERT_TRUE(streams.Reserve("alice").ok());
  streams.Started("alice", "n1", 7, 1000, 0);
  ASSERT_TRUE(streams.Reserve("alice").ok());
  streams.Started("alice", "n1", 7, 1000, 0);  // the worker answered a retried start with the same id
  EXPECT_EQ(streams.held("alice"), 1u);
  EXPECT_EQ(streams.open(), 1u);
  streams.Polled("n1", 7, 900);  // the lease starts over at each poll
  streams.Expire(1500);
  EXPECT_EQ(streams.held("alice"), 1u);
  streams.Expire(2000);  // 900 + 1000 + 100
  EXPECT_EQ(streams.held("alice"), 0u);
  EXPECT_EQ(streams.open(), 0u);
}

TEST(InflightRequestsTest, AKeyIsRefusedPastItsLimitUntilARequestIsAnswered) {
  InflightRequests inflight(2);
  ASSERT_TRUE(inflight.Admit("K", "p1", 1, 0).ok());
  ASSERT_TRUE(inflight.Admit("K", "p2", 1, 0).ok());  // the key's connections share the limit
  Status refused = inflight.Admit("K", "p1", 2, 0);
  EXPECT_TRUE(NamesLimit(refused, "--max-inflight-per-key 2")) << refused.ToString();
  EXPECT_NE(refused.message().find("key K has 2 requests"), std::string::npos) << refused.ToString();
  EXPECT_TRUE(inflight.Admit("L", "p3", 1, 0).ok());  // another key is not held by K's
  inflight.Answered("p1", 99);  // no such request: nothing freed
  EXPECT_EQ(inflight.held("K"), 2u);
  inflight.Answered("p1", 1);
  EXPECT_EQ(inflight.held("K"), 1u);
  EXPECT_TRUE(inflight.Admit("K", "p1", 2, 0).ok());
  EXPECT_EQ(inflight.open(), 3u);
}

TEST(InflightRequestsTest, AReusedIdCountsEachTimeAndAClosedOrAgedRequestIsFreed) {
  InflightRequests inflight(3, /*max_age_ms=*/10'000);
  ASSERT_TRUE(inflight.Admit("K", "p1", 5, 0).ok());
  ASSERT_TRUE(inflight.Admit("K", "p1", 5, 0).ok());
  ASSERT_TRUE(inflight.Admit("K", "p2", 1, 5000).ok());
  EXPECT_FALSE(inflight.Admit("K", "p1", 6, 5000).ok());
  inflight.Answered("p1", 5);
  EXPECT_EQ(inflight.held("K"), 2u);  // one answer frees one use
  inflight.PeerGone("p1");
  EXPECT_EQ(inflight.held("K"), 1u);
  inflight.Expire(14'999);
  EXPECT_EQ(inflight.held("K"), 1u);
  inflight.Expire(16'000);  // scanned at most once a second
  EXPECT_EQ(inflight.held("K"), 0u);
  EXPECT_EQ(inflight.open(), 0u);
}

class ConnectionLedgerTest : public ::testing::Test {
 protected:
  Status Admit(int fd, const std::string& peer, const std::string& key, bool exempt = false) {
    return ledger_.Admit(fd, peer, key, [exempt] { return exempt; }, 0);
  }
  ConnectionLedger ledger_{2};
};

TEST_F(ConnectionLedgerTest, AKeysThirdConnectionIsRefusedUntilOneCloses) {
  for (int fd : {10, 11, 12, 13}) ledger_.Opened(fd);
  ASSERT_TRUE(Admit(10, "a", "K").ok());
  ASSERT_TRUE(Admit(10, "a", "K").ok());  // a connection counts once, however much it says
  ASSERT_TRUE(Admit(11, "b", "K").ok());
  Status refused = Admit(12, "c", "K");
  EXPECT_TRUE(NamesLimit(refused, "--max-connections-per-key 2")) << refused.ToString();
  EXPECT_NE(refused.message().find("key K has 2 connections"), std::string::npos) << refused.ToString();
  EXPECT_TRUE(Admit(13, "d", "L").ok());  // another key is not held by K's
  EXPECT_EQ(ledger_.held("K"), 2u);
  EXPECT_EQ(ledger_.Closed(10), std::optional<std::string>("a"));
  EXPECT_EQ(ledger_.held("K"), 1u);
  EXPECT_TRUE(Admit(12, "c", "K").ok());  // the refused connection is admitted once a slot frees
  EXPECT_EQ(ledger_.held("K"), 2u);
  EXPECT_EQ(ledger_.counted(), 3u);
}

TEST_F(ConnectionLedgerTest, ReconnectingManyTimesNeverLocksAKeyOut) {
  for (int round = 0; round < 100; ++round) {
    ledger_.Opened(20);
    ASSERT_TRUE(Admit(20, "peer-" + std::to_string(round), "K").ok()) << round;
    ledger_.Closed(20);
  }
  EXPECT_EQ(ledger_.held("K"), 0u);
  EXPECT_EQ(ledger_.tracked(), 0u);
}

TEST_F(ConnectionLedgerTest, AdminsAreNotCountedAndLateMessagesOfClosedConnectionsCountForNothing) {
  for (int fd : {1, 2, 3}) ledger_.Opened(fd);
  for (int fd : {1, 2, 3}) ASSERT_TRUE(Admit(fd, "adm-" + std::to_string(fd), "A", /*exempt=*/true).ok());
  EXPECT_EQ(ledger_.held("A"), 0u);
  // Connection "x" on fd 5 closes with a message still queued; fd 5 is reused.
  ledger_.Opened(5);
  ASSERT_TRUE(Admit(5, "x", "K").ok());
  ledger_.Closed(5);
  ledger_.Opened(5);
  EXPECT_TRUE(Admit(5, "x", "K").ok());
  EXPECT_EQ(ledger_.held("K"), 0u);
  ASSERT_TRUE(Admit(5, "y", "K").ok());  // the new connection counts
  EXPECT_EQ(ledger_.held("K"), 1u);
  // A close the monitor missed: the fd reopening ends the old connection.
  ledger_.Opened(5);
  EXPECT_EQ(ledger_.held("K"), 0u);
  // A message on an fd never seen opening (no monitor event) is delivered, uncounted.
  EXPECT_TRUE(Admit(99, "z", "K").ok());
  EXPECT_EQ(ledger_.held("K"), 0u);
}

}  // namespace
}  // namespace gpool::control
