#include "control/snapshot_schedule.h"

#include <gtest/gtest.h>

#include <vector>

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

// Replicas with different staggers are due at different indexes the first
// time, and stay a fraction of a period apart afterwards.
TEST(SnapshotScheduleTest, StaggeredReplicasAreNotDueAtTheSameIndex) {
  std::vector<SnapshotSchedule> replicas;
  for (int id = 0; id < 3; ++id) replicas.emplace_back(/*min_entries=*/30, /*log_ratio=*/1.0, id / 3.0);
  std::vector<std::vector<uint64_t>> taken(3);
  for (uint64_t index = 1; index <= 300; ++index) {
    for (size_t r = 0; r < replicas.size(); ++r) {
      replicas[r].Applied(index, 10);
      if (replicas[r].Due()) {
        replicas[r].Covered(index, /*bytes=*/300);
        replicas[r].Taken();
        taken[r].push_back(index);
      }
    }
  }
  EXPECT_EQ(taken[0], (std::vector<uint64_t>{30, 60, 90, 120, 150, 180, 210, 240, 270, 300}));
  EXPECT_EQ(taken[1], (std::vector<uint64_t>{40, 70, 100, 130, 160, 190, 220, 250, 280}));
  EXPECT_EQ(taken[2], (std::vector<uint64_t>{50, 80, 110, 140, 170, 200, 230, 260, 290}));
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
