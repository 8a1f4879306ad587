#include "worker/runner/run_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "worker/test_util.h"

namespace gpool::worker {
namespace {

auto Always(bool answer) {
  return [answer](const std::string&) { return answer; };
}

TEST(RunDirTest, TheFlagWins) {
  testing::TempDir dir;
  EXPECT_EQ(ChooseRunDir("/x/run", dir.path() + "/data", dir.path(), Always(true)).dir, "/x/run");
}

TEST(RunDirTest, WithoutATmpfsTheRecordsStayUnderTheDataDir) {
  testing::TempDir dir;
  const RunDirChoice choice = ChooseRunDir("", dir.path() + "/data", dir.path() + "/run", Always(false));
  EXPECT_EQ(choice.dir, dir.path() + "/data/tasks");
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/run/gpool-worker"));
}

TEST(RunDirTest, OnATmpfsEachDataDirGetsItsOwnStableReachableDirectory) {
  testing::TempDir dir;
  const std::string root = dir.path() + "/run";
  std::filesystem::create_directories(root);
  const RunDirChoice a = ChooseRunDir("", dir.path() + "/a", root, Always(true));
  const RunDirChoice b = ChooseRunDir("", dir.path() + "/b", root, Always(true));
  EXPECT_EQ(std::filesystem::path(a.dir).parent_path().string(), root + "/gpool-worker");
  EXPECT_NE(a.dir, b.dir);
  EXPECT_EQ(ChooseRunDir("", dir.path() + "/a/", root, Always(true)).dir, a.dir) << "the same data dir, spelt otherwise";
  EXPECT_EQ(ChooseRunDir("", dir.path() + "/a", root, Always(true)).dir, a.dir) << "and again after a restart";
  struct stat st {};
  ASSERT_EQ(stat(a.dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
  ASSERT_EQ(stat((root + "/gpool-worker").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
}

TEST(RunDirTest, ALinkPutInPlaceOfTheDirectoryIsNotFollowed) {
  testing::TempDir dir;
  const std::string root = dir.path() + "/run";
  std::filesystem::create_directories(root);
  std::filesystem::create_directories(dir.path() + "/elsewhere");
  std::filesystem::create_directory_symlink(dir.path() + "/elsewhere", root + "/gpool-worker");
  const RunDirChoice choice = ChooseRunDir("", dir.path() + "/data", root, Always(true));
  EXPECT_EQ(choice.dir, dir.path() + "/data/tasks") << choice.why;
}

TEST(RunDirTest, IsTmpfsSaysNoForOtherFileSystemsAndMissingPaths) {
  EXPECT_FALSE(IsTmpfs("/proc"));
  EXPECT_FALSE(IsTmpfs("/no/such/dir"));
}

}  // namespace
}  // namespace gpool::worker
