#include "worker/cuda/ledger_file.h"

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
  EXPECT_FALSE(ReadLedger(path_.c_str()).ok);
  // Another program's file is never taken over.
  EXPECT_EQ(LedgerFile::Open(path_.c_str()), nullptr);
}

}  // namespace
}  // namespace gpool::cuda
