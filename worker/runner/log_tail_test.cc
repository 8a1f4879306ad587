#include "worker/runner/log_tail.h"

#include <gtest/gtest.h>

#include "worker/test_util.h"

namespace gpool::worker {
namespace {

TEST(LogTailTest, WholeFileWhenSmall) {
  testing::TempDir dir;
  auto tail = ReadLogTail(dir.Write("a.log", "hello\n"), 1024);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->data, "hello\n");
  EXPECT_EQ(tail->size, 6u);
  EXPECT_FALSE(tail->truncated);
}

TEST(LogTailTest, TailWhenLarge) {
  testing::TempDir dir;
  auto tail = ReadLogTail(dir.Write("a.log", "0123456789"), 4);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->data, "6789");
  EXPECT_EQ(tail->size, 10u);
  EXPECT_TRUE(tail->truncated);
}

TEST(LogTailTest, CappedAtFourMiB) {
  testing::TempDir dir;
  const std::string big(kMaxLogTailBytes + 100, 'x');
  auto tail = ReadLogTail(dir.Write("big.log", big), UINT64_MAX);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->data.size(), kMaxLogTailBytes);
  EXPECT_TRUE(tail->truncated);
}

TEST(LogTailTest, ZeroBytes) {
  testing::TempDir dir;
  auto tail = ReadLogTail(dir.Write("a.log", "abc"), 0);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->data, "");
  EXPECT_EQ(tail->size, 3u);
  EXPECT_TRUE(tail->truncated);
}

TEST(LogTailTest, MissingIsNotFound) {
  EXPECT_EQ(ReadLogTail("/nonexistent/x.log", 10).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpool::worker
