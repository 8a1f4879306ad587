#include "worker/runner/proc_stat.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include "worker/test_util.h"

namespace gpool::worker {
namespace {

TEST(ProcStatTest, ParsesParentAndGroup) {
  auto stat = ParseProcStat("4321 (python3) S 4000 4000 3999 0 -1 4194560 ...\n");
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(*stat, (ProcStat{4321, 4000, 4000}));
}

TEST(ProcStatTest, CommandNamesWithSpacesAndParentheses) {
  // comm is the executable's name as the process set it, any bytes but NUL.
  auto stat = ParseProcStat("77 (a) b (c)) R 12 34 34 0");
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(*stat, (ProcStat{77, 12, 34}));
}

TEST(ProcStatTest, MalformedIsNullopt) {
  EXPECT_FALSE(ParseProcStat("").has_value());
  EXPECT_FALSE(ParseProcStat("12 (x S 1 1").has_value());
  EXPECT_FALSE(ParseProcStat("12 (x) S").has_value());
  EXPECT_FALSE(ParseProcStat("12 (x) S 1").has_value());
  EXPECT_FALSE(ParseProcStat("x (y) S 1 1").has_value());
}

TEST(ProcStatTest, ReadsFromRootAndMissingIsNullopt) {
  testing::TempDir proc;
  proc.Write("55/stat", "55 (sleep) S 1 55 55 0\n");
  EXPECT_EQ(ReadProcStat(proc.path(), 55), (ProcStat{55, 1, 55}));
  EXPECT_FALSE(ReadProcStat(proc.path(), 56).has_value());
}

TEST(ProcStatTest, ReadsThisProcess) {
  auto stat = ReadProcStat("/proc", getpid());
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->pid, getpid());
  EXPECT_EQ(stat->ppid, getppid());
  EXPECT_EQ(stat->pgrp, getpgrp());
}

}  // namespace
}  // namespace gpool::worker
