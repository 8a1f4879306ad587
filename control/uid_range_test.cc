// --uid-range (issue 48): FIRST-LAST, where users created without --uid get
// their uids; never root's or nobody's, and each bad value says why.
#include <gtest/gtest.h>

#include "control/coordinator_options.h"

namespace gpool::control {
namespace {

TEST(UidRangeTest, ParsesARangeAndRefusesBadOnes) {
  auto range = ParseUidRange("200000-299999");
  ASSERT_TRUE(range.ok()) << range.status().ToString();
  EXPECT_EQ(range->first, 200'000u);
  EXPECT_EQ(range->second, 299'999u);
  range = ParseUidRange("70000-70000");
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->first, range->second);
  for (const char* bad : {"", "200000", "-5", "5-", "a-b", "300-200", "0-100", "1-4294967295", "60000-70000",
                          "65534-65534", "1-2-3", " 1-2"}) {
    auto refused = ParseUidRange(bad);
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(refused.status().message().find("--uid-range"), std::string::npos) << refused.status().message();
  }
  EXPECT_NE(ParseUidRange("60000-70000").status().message().find("65534 (nobody)"), std::string::npos);
}

}  // namespace
}  // namespace gpool::control
