#include "protocol/base/fd_limit.h"

#include <sys/resource.h>

#include <gtest/gtest.h>

namespace gpool {
namespace {

// Lowers the soft limit for one test and puts it back after.
class FdLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved_), 0);
    if (saved_.rlim_max != RLIM_INFINITY && saved_.rlim_max < 512) GTEST_SKIP() << "hard limit below 512";
    struct rlimit low = saved_;
    low.rlim_cur = 256;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  }
  void TearDown() override { setrlimit(RLIMIT_NOFILE, &saved_); }
  static uint64_t Soft() {
    struct rlimit now {};
    getrlimit(RLIMIT_NOFILE, &now);
    return now.rlim_cur;
  }
  struct rlimit saved_ {};
};

TEST_F(FdLimitTest, RaisesTheSoftLimitToWhatIsWanted) {
  auto raised = RaiseOpenFileLimit(400);
  ASSERT_TRUE(raised.ok()) << raised.status().ToString();
  EXPECT_EQ(raised->before, 256u);
  EXPECT_EQ(raised->now, 400u);
  EXPECT_EQ(Soft(), 400u);
}

TEST_F(FdLimitTest, NeverLowersIt) {
  auto raised = RaiseOpenFileLimit(100);
  ASSERT_TRUE(raised.ok());
  EXPECT_EQ(raised->now, 256u);
  EXPECT_EQ(Soft(), 256u);
}

TEST_F(FdLimitTest, StopsAtTheHardLimit) {
  auto raised = RaiseOpenFileLimit(UINT64_MAX);
  ASSERT_TRUE(raised.ok());
  EXPECT_EQ(raised->now, raised->hard);
  EXPECT_EQ(Soft(), saved_.rlim_max);
}

}  // namespace
}  // namespace gpool
