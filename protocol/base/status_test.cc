#include "protocol/base/status.h"

#include <gtest/gtest.h>

#include "protocol/base/clock.h"
#include "protocol/base/ids.h"
#include "protocol/base/testing/fake_clock.h"

namespace gpool {
namespace {

Result<int> ParsePositive(int v) {
  if (v <= 0) return Status::InvalidArgument("v: must be positive");
  return v;
}

Status UsesMacros(int v, int* out) {
  GPOOL_ASSIGN_OR_RETURN(*out, ParsePositive(v));
  return Status::Ok();
}

TEST(StatusTest, CodesRoundTripThroughNames) {
  for (int i = 0; i <= static_cast<int>(StatusCode::kPermissionDenied); ++i) {
    auto code = static_cast<StatusCode>(i);
    auto back = StatusCodeFromName(StatusCodeName(code));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, code);
  }
  EXPECT_FALSE(StatusCodeFromName("NoSuchCode").has_value());
}

TEST(StatusTest, ResultCarriesValueOrError) {
  int out = 0;
  EXPECT_TRUE(UsesMacros(3, &out).ok());
  EXPECT_EQ(out, 3);
  Status s = UsesMacros(-1, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.ToString(), "InvalidArgument: v: must be positive");
  EXPECT_EQ(s.WithContext("spec").message(), "spec: v: must be positive");
}

TEST(ClockTest, FakeClockAdvancesOnlyWhenTold) {
  FakeClock clock(1000);
  EXPECT_EQ(clock.WallMs(), 1000);
  EXPECT_EQ(clock.MonoMs(), 0);
  clock.Advance(250);
  EXPECT_EQ(clock.WallMs(), 1250);
  EXPECT_EQ(clock.MonoMs(), 250);
}

TEST(IdsTest, TaskIdFormatsAttemptOnlyWhenNonZero) {
  EXPECT_EQ((TaskId{JobId(17), 0, 0}).ToString(), "17.0");
  EXPECT_EQ((TaskId{JobId(17), 3, 2}).ToString(), "17.3#2");
}

}  // namespace
}  // namespace gpool
