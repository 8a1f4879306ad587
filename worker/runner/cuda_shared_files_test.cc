#include "worker/runner/cuda_shared_files.h"

#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace gpool::worker {
namespace {

namespace fs = std::filesystem;

class CudaSharedFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpool-cuda-files-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  static mode_t ModeOf(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
    return st.st_mode;
  }
  static void Touch(const std::string& path, int64_t age_s) {
    std::ofstream(path) << "x";
    struct timeval times[2];
    gettimeofday(&times[0], nullptr);
    times[0].tv_sec -= age_s;
    times[1] = times[0];
    ASSERT_EQ(utimes(path.c_str(), times), 0);
  }
  size_t Aside() {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir_)) n += e.path().filename().string().find(".untrusted.") != std::string::npos;
    return n;
  }
  std::string dir_;
};

TEST_F(CudaSharedFilesTest, MakesTheDirectoryWithExactlyItsModeWhateverTheUmask) {
  const mode_t before = umask(077);
  ASSERT_TRUE(EnsureWorkerDir(dir_ + "/activity", 01777).ok());
  ASSERT_TRUE(EnsureWorkerDir(dir_ + "/ledgers", 0711).ok());
  umask(before);
  EXPECT_EQ(ModeOf(dir_ + "/activity") & 07777, 01777u);
  EXPECT_EQ(ModeOf(dir_ + "/ledgers") & 07777, 0711u);
  // Again, with a file inside: kept.
  std::ofstream(dir_ + "/activity/keep") << "x";
  ASSERT_TRUE(EnsureWorkerDir(dir_ + "/activity", 01777).ok());
  EXPECT_TRUE(fs::exists(dir_ + "/activity/keep"));
  EXPECT_EQ(Aside(), 0u);
}

// What a task made first -- a symlink, a file, a directory of its own user
// -- is moved aside, never used or followed.
TEST_F(CudaSharedFilesTest, WhatATaskMadeFirstIsMovedAsideNotUsed) {
  const std::string target = dir_ + "/target";
  ASSERT_TRUE(fs::create_directory(target));
  fs::create_directory_symlink(target, dir_ + "/link");
  ASSERT_TRUE(EnsureWorkerDir(dir_ + "/link", 01777).ok());
  EXPECT_TRUE(S_ISDIR(ModeOf(dir_ + "/link")));
  EXPECT_NE(ModeOf(target) & 07777, 01777u) << "the link's target is untouched";

  std::ofstream(dir_ + "/file") << "x";
  ASSERT_TRUE(EnsureWorkerDir(dir_ + "/file", 0711).ok());
  EXPECT_TRUE(S_ISDIR(ModeOf(dir_ + "/file")));

  if (geteuid() == 0) {  // only root can give a directory away
    const std::string foreign = dir_ + "/foreign";
    ASSERT_TRUE(fs::create_directory(foreign));
    ASSERT_EQ(chown(foreign.c_str(), 65534, 65534), 0);
    ASSERT_TRUE(EnsureWorkerDir(foreign, 01777).ok());
    struct stat st {};
    ASSERT_EQ(lstat(foreign.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(Aside(), 3u);
  } else {
    EXPECT_EQ(Aside(), 2u);
  }
}

// A ledger a task planted first is replaced by a fresh one: empty, 0600,
// the task's, and not a link to anything.
TEST_F(CudaSharedFilesTest, ALedgerIsMadeFreshForItsTask) {
  const std::string ledger = dir_ + "/gpool-cuda-1-0-0";
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, ledger);
  const uid_t uid = geteuid() == 0 ? 65534 : geteuid();
  const gid_t gid = geteuid() == 0 ? 65534 : getegid();
  ASSERT_TRUE(CreateTaskLedger(ledger, uid, gid).ok());
  struct stat st {};
  ASSERT_EQ(lstat(ledger.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, uid);
  EXPECT_EQ(st.st_size, 0);
  EXPECT_EQ(fs::file_size(victim), 8u);
  // A file planted with open permissions is replaced the same way.
  ASSERT_EQ(unlink(ledger.c_str()), 0);
  std::ofstream(ledger) << "zeroes";
  ASSERT_EQ(chmod(ledger.c_str(), 0666), 0);
  ASSERT_TRUE(CreateTaskLedger(ledger, uid, gid).ok());
  ASSERT_EQ(lstat(ledger.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_size, 0);
}

// A shared directory named by mistake is never narrowed.
TEST_F(CudaSharedFilesTest, ASharedDirectoryIsRefusedNotNarrowed) {
  const std::string shared = dir_ + "/shm";
  ASSERT_TRUE(fs::create_directory(shared));
  ASSERT_EQ(chmod(shared.c_str(), 01777), 0);
  const Status status = EnsureWorkerDir(shared, 0711);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_EQ(ModeOf(shared) & 07777, 01777u);
}

TEST_F(CudaSharedFilesTest, TheSweepRemovesStaleFilesAndJunkAndKeepsLiveOnes) {
  const int64_t now_ms = static_cast<int64_t>(time(nullptr)) * 1000;
  const std::string gpu = "0123456789abcdef0123456789ABCDEF";
  auto name = [&](const char* pid) { return dir_ + "/" + gpu + ".00000000000000a1." + pid + ".fedcba9876543210"; };
  Touch(name("10"), 5);
  Touch(name("11"), 3600);
  fs::create_symlink("/etc/passwd", name("12"));
  ASSERT_EQ(mkfifo(name("13").c_str(), 0644), 0);
  ASSERT_TRUE(fs::create_directory(name("14")));
  // Not the interposer's names: never touched, however old.
  Touch(dir_ + "/someone-elses-file", 3600);
  Touch(name("15") + "x", 3600);
  EXPECT_EQ(SweepActivityDir(dir_, now_ms, 600'000), 3u);
  EXPECT_TRUE(fs::exists(name("10")));
  EXPECT_FALSE(fs::exists(name("11")));
  EXPECT_FALSE(fs::is_symlink(name("12")));
  EXPECT_FALSE(fs::exists(name("13")));
  EXPECT_TRUE(fs::exists(name("14")));
  EXPECT_TRUE(fs::exists(dir_ + "/someone-elses-file"));
  EXPECT_TRUE(fs::exists(name("15") + "x"));
  EXPECT_TRUE(fs::exists("/etc/passwd"));
  EXPECT_EQ(SweepActivityDir(dir_ + "/missing", now_ms, 600'000), 0u);
}

}  // namespace
}  // namespace gpool::worker
