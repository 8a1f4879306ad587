#include "worker/backoff.h"

#include <gtest/gtest.h>

namespace gpool::worker {
namespace {

TEST(BackoffTest, DoublesFromInitialToMaxWithoutJitterAtMidpoint) {
  Backoff backoff({.initial_ms = 100, .max_ms = 5000, .jitter = 0.2}, [] { return 0.5; });
  std::vector<int64_t> delays;
  for (int i = 0; i < 9; ++i) delays.push_back(backoff.Next());
  EXPECT_EQ(delays, (std::vector<int64_t>{100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000}));
}

TEST(BackoffTest, JitterStaysWithinTwentyPercent) {
  Backoff low({.initial_ms = 1000, .max_ms = 5000, .jitter = 0.2}, [] { return 0.0; });
  Backoff high({.initial_ms = 1000, .max_ms = 5000, .jitter = 0.2}, [] { return 0.999999; });
  EXPECT_EQ(low.Next(), 800);
  EXPECT_EQ(high.Next(), 1200);
}

TEST(BackoffTest, ResetStartsOver) {
  Backoff backoff({.initial_ms = 100, .max_ms = 5000, .jitter = 0.0}, [] { return 0.3; });
  backoff.Next();
  backoff.Next();
  EXPECT_EQ(backoff.base_ms(), 400);
  backoff.Reset();
  EXPECT_EQ(backoff.Next(), 100);
}

}  // namespace
}  // namespace gpool::worker
