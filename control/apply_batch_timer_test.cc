// ApplyBatchTimer (apply_batch_timer.h): a slow batch is told apart by
// command, with counts, totals and the slowest entry of each.
#include "control/apply_batch_timer.h"

#include <gtest/gtest.h>

namespace gpool::control {
namespace {

TEST(ApplyBatchTimerTest, SumsEachCommandsEntriesAndKeepsItsSlowest) {
  ApplyBatchTimer timer;
  timer.Add("ApplyPlan", 40'000);
  timer.Add("UsageCheckpoint", 520'000);
  timer.Add("ApplyPlan", 70'000);
  timer.Add("", 1'000);
  EXPECT_EQ(timer.entries(), 4u);
  EXPECT_EQ(timer.total_us(), 631'000);
  EXPECT_GE(timer.total_us(), kSlowApplyBatchUs);
  EXPECT_EQ(timer.Summary(), "ApplyPlan:2x110ms(max 70) UsageCheckpoint:1x520ms(max 520) undecodable:1x1ms(max 1)");
}

TEST(ApplyBatchTimerTest, TimesAnEntryFromItsStart) {
  ApplyBatchTimer timer;
  timer.Time("SubmitJob", ApplyBatchTimer::Now() - std::chrono::milliseconds(5));
  EXPECT_GE(timer.total_us(), 5'000);
  EXPECT_EQ(timer.entries(), 1u);
}

}  // namespace
}  // namespace gpool::control
