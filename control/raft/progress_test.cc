#include "control/raft/progress.h"

#include <gtest/gtest.h>

namespace gpool::raft {
namespace {

TEST(ProgressTest, InflightsFreeUpToAnAcknowledgedIndex) {
  Inflights in(3);
  in.Add(5);
  in.Add(7);
  EXPECT_FALSE(in.Full());
  in.Add(9);
  EXPECT_TRUE(in.Full());
  in.FreeLE(7);
  EXPECT_EQ(in.Count(), 1u);
  in.FreeFirstOne();
  EXPECT_EQ(in.Count(), 0u);
}

TEST(ProgressTest, ProbeSendsOneAtATime) {
  Progress p(10, 4);
  EXPECT_FALSE(p.IsPaused());
  p.SentEntries(12, 3);
  EXPECT_TRUE(p.IsPaused());
  EXPECT_EQ(p.next, 10u) << "probe does not move next optimistically";
  // Reject for prev index 9 with a hint at 4: jump back.
  EXPECT_TRUE(p.MaybeDecrTo(9, 4));
  EXPECT_EQ(p.next, 5u);
  EXPECT_FALSE(p.IsPaused());
  EXPECT_FALSE(p.MaybeDecrTo(9, 1)) << "a reject for an older probe is stale";
}

TEST(ProgressTest, ReplicatePipelinesAndFallsBackOnReject) {
  Progress p(1, 2);
  ASSERT_TRUE(p.MaybeUpdate(4));
  p.BecomeReplicate();
  EXPECT_EQ(p.next, 5u);
  p.SentEntries(6, 2);
  p.SentEntries(8, 2);
  EXPECT_EQ(p.next, 9u);
  EXPECT_TRUE(p.IsPaused()) << "window of two is full";
  EXPECT_TRUE(p.MaybeUpdate(6));
  p.inflights.FreeLE(6);
  EXPECT_FALSE(p.IsPaused());
  EXPECT_FALSE(p.MaybeDecrTo(5, 5)) << "already acknowledged";
  EXPECT_TRUE(p.MaybeDecrTo(8, 7));
  EXPECT_EQ(p.next, 7u);
}

// The byte bound: a few large appends fill the window long before the
// message count does, and acknowledgements give their bytes back.
TEST(ProgressTest, ReplicatePausesAtTheInflightByteBound) {
  Progress p(1, /*max_inflight=*/256, /*max_inflight_bytes=*/3000);
  ASSERT_TRUE(p.MaybeUpdate(4));
  p.BecomeReplicate();
  p.SentEntries(5, 1, 1000);
  p.SentEntries(6, 1, 1500);
  EXPECT_FALSE(p.IsPaused()) << "2,500 bytes in flight";
  p.SentEntries(7, 1, 600);
  EXPECT_TRUE(p.IsPaused()) << "3,100 bytes in flight, 3 messages of 256";
  EXPECT_EQ(p.inflights.Bytes(), 3100u);
  ASSERT_TRUE(p.MaybeUpdate(5));
  p.inflights.FreeLE(5);
  EXPECT_EQ(p.inflights.Bytes(), 2100u);
  EXPECT_FALSE(p.IsPaused());
  p.inflights.FreeFirstOne();
  p.inflights.FreeFirstOne();
  EXPECT_EQ(p.inflights.Bytes(), 0u);
  EXPECT_EQ(p.inflights.Count(), 0u);
  p.SentEntries(8, 1, 10'000);
  EXPECT_TRUE(p.IsPaused()) << "one append larger than the bound still goes, alone";
  p.BecomeProbe();
  EXPECT_EQ(p.inflights.Bytes(), 0u);
}

TEST(ProgressTest, SnapshotPausesUntilProbe) {
  Progress p(3, 8);
  p.BecomeSnapshot(20);
  EXPECT_TRUE(p.IsPaused());
  p.BecomeProbe();
  EXPECT_EQ(p.next, 21u) << "the follower holds at least the snapshot";
  EXPECT_FALSE(p.IsPaused());
}

}  // namespace
}  // namespace gpool::raft
