#include "worker/cuda/ledger_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "worker/cuda/ledger.h"

namespace gpool::cuda {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

class LedgerFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/gpool-ledger-test-XXXXXX";
    dir_ = mkdtemp(dir_template);
    path_ = dir_ + "/ledger";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  std::string path_;
};

TEST_F(LedgerFileTest, ReservesWithinTheLimitAndCreditsReleases) {
  std::unique_ptr<LedgerFile> ledger(LedgerFile::Open(path_.c_str()));
  ASSERT_NE(ledger, nullptr);
  EXPECT_TRUE(ledger->Reserve(0, 48 * kMiB, 64 * kMiB));
  EXPECT_FALSE(ledger->Reserve(0, 16 * kMiB + 1, 64 * kMiB));
  EXPECT_TRUE(ledger->Reserve(1, 64 * kMiB, 64 * kMiB));  // another device has its own share
  EXPECT_EQ(ledger->Used(0), 48 * kMiB);
  ledger->Release(0, 48 * kMiB);
  EXPECT_EQ(ledger->Used(0), 0u);
  EXPECT_TRUE(ledger->Reserve(0, 64 * kMiB, 64 * kMiB));
  EXPECT_TRUE(ledger->Reserve(2, 1ull << 40, 0));  // 0: no limit
}

TEST_F(LedgerFileTest, PrivateMemoryHoldsTheLimitForOneProcess) {
  std::unique_ptr<LedgerFile> ledger(LedgerFile::Open(nullptr));
  ASSERT_NE(ledger, nullptr);
  EXPECT_TRUE(ledger->Reserve(0, 64 * kMiB, 64 * kMiB));
  EXPECT_FALSE(ledger->Reserve(0, 1, 64 * kMiB));
}

TEST_F(LedgerFileTest, ReadLedgerSumsLiveProcessesAndSkipsDeadOnes) {
  std::unique_ptr<LedgerFile> ledger(LedgerFile::Open(path_.c_str()));
  ASSERT_NE(ledger, nullptr);
  ASSERT_TRUE(ledger->Reserve(0, 8 * kMiB, 64 * kMiB));
  // A child that takes 48 MiB and exits without giving it back.
  const pid_t child = fork();
  if (child == 0) {
    std::unique_ptr<LedgerFile> mine(LedgerFile::Open(path_.c_str()));
    _exit(mine != nullptr && mine->Reserve(0, 48 * kMiB, 64 * kMiB) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  const LedgerTotals totals = ReadLedger(path_.c_str());
  ASSERT_TRUE(totals.ok);
  EXPECT_EQ(totals.processes, 1);
  EXPECT_EQ(totals.used_bytes[0], 8 * kMiB);
  // The writer reclaims the dead child's entry: the whole rest fits.
  EXPECT_TRUE(ledger->Reserve(0, 56 * kMiB, 64 * kMiB));
}

// A pid the kernel gave to another process since is not the entry's
// process: its start time differs.
TEST_F(LedgerFileTest, AReusedPidDoesNotKeepTheDeadProcessesShare) {
  std::unique_ptr<LedgerFile> ledger(LedgerFile::Open(path_.c_str()));
  ASSERT_NE(ledger, nullptr);
  ASSERT_TRUE(ledger->Reserve(0, 48 * kMiB, 64 * kMiB));
  // Rewrite this process's entry as if an older process with our pid had made it.
  int fd = open(path_.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto* layout = static_cast<LedgerLayout*>(
      mmap(nullptr, sizeof(LedgerLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  close(fd);
  ASSERT_NE(layout, MAP_FAILED);
  ASSERT_EQ(layout->processes[0].pid.load(), getpid());
  EXPECT_EQ(ReadLedger(path_.c_str()).used_bytes[0], 48 * kMiB);
  layout->processes[0].start_ticks.store(ProcessStartTicks(getpid()) + 1);
  EXPECT_EQ(ReadLedger(path_.c_str()).used_bytes[0], 0u);
  munmap(layout, sizeof(LedgerLayout));
}

TEST_F(LedgerFileTest, ReadLedgerRejectsWhatIsNotALedger) {
  EXPECT_FALSE(ReadLedger((dir_ + "/absent").c_str()).ok);
  FILE* f = std::fopen(path_.c_str(), "w");
  std::fputs("not a ledger", f);
  std::fclose(f);
  chmod(path_.c_str(), 0600);  // trusted, so what is refused is the content
  EXPECT_FALSE(ReadLedger(path_.c_str()).ok);
  // Another program's file is never taken over.
  EXPECT_EQ(LedgerFile::Open(path_.c_str()), nullptr);
}

// A ledger another user could have written (at a predictable path in
// /dev/shm, created first and kept open) is not used: the interposer then
// refuses memory. Tests run as root, so "another user" is mode bits, a
// symlink or a FIFO here.
TEST_F(LedgerFileTest, OnlyARegularFileOfThisUserWithoutGroupOrOtherBitsIsTrusted) {
  bool untrusted = false;
  const int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  for (const mode_t mode : {0666, 0640, 0604, 0620}) {
    chmod(path_.c_str(), mode);
    EXPECT_EQ(LedgerFile::Open(path_.c_str(), &untrusted), nullptr) << std::oct << mode;
    EXPECT_TRUE(untrusted) << std::oct << mode;
  }
  chmod(path_.c_str(), 0600);
  const std::string link = dir_ + "/link";
  std::filesystem::create_symlink(path_, link);
  EXPECT_EQ(LedgerFile::Open(link.c_str(), &untrusted), nullptr);
  EXPECT_TRUE(untrusted);
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(LedgerFile::Open(fifo.c_str(), &untrusted), nullptr);
  EXPECT_TRUE(untrusted);
  EXPECT_EQ(std::filesystem::file_size(path_), 0u);  // nothing was written through any of them

  std::unique_ptr<LedgerFile> ledger(LedgerFile::Open(path_.c_str(), &untrusted));
  ASSERT_NE(ledger, nullptr);
  EXPECT_FALSE(untrusted);
  EXPECT_TRUE(ledger->Reserve(0, kMiB, 64 * kMiB));
  // Missing: created, 0600.
  const std::string fresh = dir_ + "/fresh";
  std::unique_ptr<LedgerFile> created(LedgerFile::Open(fresh.c_str(), &untrusted));
  ASSERT_NE(created, nullptr);
  EXPECT_FALSE(untrusted);
  struct stat st {};
  ASSERT_EQ(stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

// The worker reads a ledger the task owns: the task truncating it must not
// crash the reader (a copy with pread, never a mapping).
TEST_F(LedgerFileTest, ReadLedgerOfATruncatedLedgerFailsWithoutACrash) {
  std::unique_ptr<LedgerFile> ledger(LedgerFile::Open(path_.c_str()));
  ASSERT_NE(ledger, nullptr);
  ASSERT_TRUE(ledger->Reserve(0, 8 * kMiB, 64 * kMiB));
  ASSERT_TRUE(ReadLedger(path_.c_str()).ok);
  for (const off_t size : {off_t{4096}, off_t{0}}) {
    ASSERT_EQ(truncate(path_.c_str(), size), 0);
    EXPECT_FALSE(ReadLedger(path_.c_str()).ok);
  }
  // (This process's own mapping is not touched again: it would fault.)
}

}  // namespace
}  // namespace gpool::cuda
