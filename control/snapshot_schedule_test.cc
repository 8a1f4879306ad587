#include "control/snapshot_schedule.h"

#include <gtest/gtest.h>

namespace gpool::control {
namespace {

TEST(SnapshotScheduleTest, TheFirstSnapshotFollowsTheCountAlone) {
  SnapshotSchedule schedule(/*min_entries=*/3, /*log_ratio=*/1.0);
  schedule.Applied(1, 10);
  schedule.Applied(2, 10);
  EXPECT_FALSE(schedule.Due());
  schedule.Applied(3, 10);
  EXPECT_TRUE(schedule.Due());
}

TEST(SnapshotScheduleTest, ALargeStateWaitsForALogOfItsSize) {
  SnapshotSchedule schedule(/*min_entries=*/3, /*log_ratio=*/1.0);
  schedule.Covered(100, /*bytes=*/1000);
  uint64_t index = 100;
  for (int i = 0; i < 9; ++i) schedule.Applied(++index, 100);
  EXPECT_EQ(schedule.entries_since(), 9u);
  EXPECT_EQ(schedule.bytes_since(), 900u);
  EXPECT_FALSE(schedule.Due()) << "900 bytes of log do not yet pay for a 1000-byte snapshot";
  schedule.Applied(++index, 100);
  EXPECT_TRUE(schedule.Due());
  schedule.Covered(index, 5000);
  EXPECT_FALSE(schedule.Due());
  EXPECT_EQ(schedule.bytes_since(), 0u);
  EXPECT_EQ(schedule.last_index(), 110u);
}

TEST(SnapshotScheduleTest, ASmallStateStillWaitsForTheCount) {
  SnapshotSchedule schedule(/*min_entries=*/5, /*log_ratio=*/1.0);
  schedule.Covered(10, 1);
  for (uint64_t index = 11; index <= 14; ++index) schedule.Applied(index, 1000);
  EXPECT_FALSE(schedule.Due());
  schedule.Applied(15, 1000);
  EXPECT_TRUE(schedule.Due());
}

TEST(SnapshotScheduleTest, RatioZeroIsThePlainCountRule) {
  SnapshotSchedule schedule(/*min_entries=*/2, /*log_ratio=*/0.0);
  schedule.Covered(4, 1 << 30);
  schedule.Applied(5, 1);
  EXPECT_FALSE(schedule.Due());
  schedule.Applied(6, 1);
  EXPECT_TRUE(schedule.Due());
}

TEST(SnapshotScheduleTest, EntriesTheSnapshotCoversAreNotCountedAgain) {
  // A follower that installs the leader's snapshot at 50 may still be handed
  // entries below it; they are in the snapshot, not in the log after it.
  SnapshotSchedule schedule(/*min_entries=*/1, /*log_ratio=*/1.0);
  schedule.Covered(50, 100);
  schedule.Applied(40, 1000);
  schedule.Applied(50, 1000);
  EXPECT_EQ(schedule.bytes_since(), 0u);
  EXPECT_EQ(schedule.entries_since(), 0u);
  EXPECT_FALSE(schedule.Due());
}

}  // namespace
}  // namespace gpool::control
