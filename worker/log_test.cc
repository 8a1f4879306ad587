#include "worker/log.h"

#include <gtest/gtest.h>

namespace gpool::worker {
namespace {

TEST(LogTest, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(Q("plain"), "plain");
  EXPECT_EQ(Q(""), "\"\"");
  EXPECT_EQ(Q("two words"), "\"two words\"");
  EXPECT_EQ(Q("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(Q("line\nbreak"), "\"line\\nbreak\"");
  EXPECT_EQ(Q(std::string("\x01", 1)), "\"\\x01\"");
  EXPECT_EQ(Q("abcdef", 3), "\"abc...\"");
}

}  // namespace
}  // namespace gpool::worker
