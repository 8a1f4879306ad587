#include "worker/runner/log_cap.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "worker/runner/log_tail.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

// The numbered lines 0..count-1, each "line N\n".
std::string Lines(int first, int count) {
  std::string text;
  for (int i = first; i < first + count; ++i) text += "line " + std::to_string(i) + "\n";
  return text;
}

TEST(LogCapTest, ALogPastItsCapKeepsItsLastHalfAsideAndStartsAgain) {
  testing::TempDir dir;
  const std::string log = (dir.path() + "/1.0.0.log");
  const std::string written = Lines(0, 300'000);  // about 3.5 MB
  std::ofstream(log, std::ios::binary) << written;
  const uint64_t cap = 1 << 20;

  auto capped = CapTaskLog(log, cap);
  ASSERT_TRUE(capped.ok()) << capped.status().ToString();
  EXPECT_TRUE(*capped);
  const std::string live = Slurp(log);
  EXPECT_EQ(live.rfind("gpool-worker: this log is capped at 1 MiB", 0), 0u) << live;
  EXPECT_LT(live.size(), 512u);
  EXPECT_EQ(Slurp(log + ".1"), written.substr(written.size() - cap / 2)) << "the most recent half of the cap";
  EXPECT_EQ(DroppedLogBytes(log), written.size());

  // The task goes on writing; the tail shows it, and says what was dropped.
  std::ofstream(log, std::ios::app) << "after\n";
  auto tail = ReadLogTail(log, 1 << 20);
  ASSERT_TRUE(tail.ok());
  EXPECT_NE(tail->data.find("after\n"), std::string::npos);
  EXPECT_EQ(tail->dropped, written.size());

  // A second overflow adds to the count and replaces the aside.
  std::ofstream(log, std::ios::app) << Lines(0, 200'000);
  ASSERT_TRUE(*CapTaskLog(log, cap));
  EXPECT_GT(DroppedLogBytes(log), written.size() + 2'000'000);
  EXPECT_EQ(Slurp(log + ".1").size(), cap / 2);
}

TEST(LogCapTest, AFinishedTasksLogKeepsItsLastOutput) {
  testing::TempDir dir;
  const std::string log = dir.path() + "/3.0.0.log";
  const std::string written = Lines(0, 300'000) + "the-end\n";
  std::ofstream(log, std::ios::binary) << written;
  const uint64_t cap = 1 << 20;
  ASSERT_TRUE(*CapTaskLog(log, cap, /*finished=*/true));
  const std::string live = Slurp(log);
  EXPECT_EQ(live.rfind("gpool-worker: this log is capped at 1 MiB", 0), 0u) << live.substr(0, 200);
  EXPECT_EQ(live.substr(live.find('\n') + 1), written.substr(written.size() - cap / 2)) << "its last output";
  EXPECT_EQ(DroppedLogBytes(log), written.size() - cap / 2);
  EXPECT_EQ(live.substr(live.size() - 8), "the-end\n");
  // The rewritten log stays its owner's: not readable by other users (issue 31).
  EXPECT_EQ(std::filesystem::status(log).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

TEST(LogCapTest, ALogWithinItsCapIsLeftAlone) {
  testing::TempDir dir;
  const std::string log = (dir.path() + "/2.0.0.log");
  std::ofstream(log) << "small\n";
  auto capped = CapTaskLog(log, 1 << 20);
  ASSERT_TRUE(capped.ok());
  EXPECT_FALSE(*capped);
  EXPECT_EQ(Slurp(log), "small\n");
  EXPECT_FALSE(std::filesystem::exists(log + ".1"));
  EXPECT_EQ(DroppedLogBytes(log), 0u);
  EXPECT_EQ(CapTaskLog((dir.path() + "/none.log"), 1 << 20).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpool::worker
