#include "protocol/base/disk_guard.h"
#include "protocol/base/testing/fake_clock.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace gpool {
namespace {

class DiskGuardTest : public ::testing::Test {
 protected:
  DiskGuard Make() {
    DiskGuardOptions options;
    options.path = "/data";
    options.reserve_bytes = 1000;
    options.clock = &clock_;
    options.stat = [this](const std::string&) -> Result<DiskSpace> {
      ++stats_;
      return DiskSpace{free_, 1'000'000};
    };
    options.probe = [this](const std::string&) { return probe_; };
    return DiskGuard(options);
  }

  FakeClock clock_;
  uint64_t free_ = 1'000'000;
  Status probe_;
  int stats_ = 0;
};

TEST_F(DiskGuardTest, WritesPassWhileSpaceIsAboveTheReserveAndOneStatServesABurst) {
  DiskGuard guard = Make();
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(guard.CheckWrite().ok());
  EXPECT_EQ(stats_, 1);
  clock_.Advance(100);
  EXPECT_TRUE(guard.CheckWrite().ok());
  EXPECT_EQ(stats_, 2);
  EXPECT_FALSE(guard.full());
}

TEST_F(DiskGuardTest, SpaceAtTheReserveRefusesWritesWithTheTypedError) {
  DiskGuard guard = Make();
  free_ = 1000;
  Status refused = guard.CheckWrite();
  EXPECT_EQ(refused, Status::Unavailable("disk full (/data, 1000 bytes free)"));
  EXPECT_EQ(refused.ToString(), "Unavailable: disk full (/data, 1000 bytes free)");
  EXPECT_TRUE(guard.full());
  // The mode holds even if space comes back, until the owner has resumed.
  free_ = 1'000'000;
  EXPECT_EQ(guard.CheckWrite().code(), StatusCode::kUnavailable);
  DiskReport report = guard.Report();
  EXPECT_TRUE(report.full);
  EXPECT_EQ(report.error, "disk full (/data, 1000 bytes free)");
}

TEST_F(DiskGuardTest, AWriteErrorEntersTheModeEvenWithSpaceLeft) {
  DiskGuard guard = Make();
  Status refusal = guard.WriteFailed(Status::IoError(std::string("write: ") + std::strerror(ENOSPC)));
  EXPECT_EQ(refusal, Status::Unavailable("disk full (/data, 1000000 bytes free)"));
  DiskGuard other = Make();
  Status eio = other.WriteFailed(Status::IoError("leveldb write in /data/db: IO error: Input/output error"));
  EXPECT_EQ(eio.code(), StatusCode::kUnavailable);
  EXPECT_EQ(eio.message(), "data dir /data is not writable (leveldb write in /data/db: IO error: Input/output error)");
}

TEST_F(DiskGuardTest, ResumeIsTriedOncePerIntervalAndNeedsSpaceAndAProbe) {
  DiskGuard guard = Make();
  free_ = 0;
  ASSERT_FALSE(guard.CheckWrite().ok());
  EXPECT_FALSE(guard.ResumeDue());  // not yet: one retry interval after entering
  clock_.Advance(1000);
  EXPECT_FALSE(guard.ResumeDue());  // still full
  EXPECT_EQ(guard.refusal().message(), "disk full (/data, 0 bytes free)");
  free_ = 5000;
  probe_ = Status::IoError("probe write /data/.gpool-write-probe: Read-only file system");
  EXPECT_FALSE(guard.ResumeDue());  // interval not passed since the last look
  clock_.Advance(1000);
  EXPECT_FALSE(guard.ResumeDue());  // space, but the probe failed
  EXPECT_EQ(guard.refusal().message(), "disk full (/data, 5000 bytes free)");
  probe_ = Status::Ok();
  clock_.Advance(1000);
  EXPECT_TRUE(guard.ResumeDue());
  EXPECT_TRUE(guard.full());  // until the owner says its writes work
  guard.Resumed();
  EXPECT_FALSE(guard.full());
  EXPECT_TRUE(guard.CheckWrite().ok());
}

TEST_F(DiskGuardTest, LogsOncePerInterval) {
  DiskGuard guard = Make();
  EXPECT_FALSE(guard.ShouldLog());  // nothing to say while healthy
  free_ = 0;
  ASSERT_FALSE(guard.CheckWrite().ok());
  EXPECT_TRUE(guard.ShouldLog());
  EXPECT_FALSE(guard.ShouldLog());
  clock_.Advance(29'999);
  EXPECT_FALSE(guard.ShouldLog());
  clock_.Advance(1);
  EXPECT_TRUE(guard.ShouldLog());
}

TEST(DiskSpaceTest, RealStatAndProbeOnATempDir) {
  std::string pattern = (std::filesystem::temp_directory_path() / "gpool-disk-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  auto space = StatDisk(pattern);
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  EXPECT_GT(space->total_bytes, 0u);
  auto free = FreeBytes(pattern);
  ASSERT_TRUE(free.ok()) << free.status().ToString();
  EXPECT_LE(*free, space->total_bytes);
  EXPECT_TRUE(ProbeWrite(pattern).ok());
  EXPECT_TRUE(std::filesystem::is_empty(pattern));  // the probe cleans up
  std::filesystem::remove_all(pattern);
  EXPECT_EQ(ProbeWrite(pattern).code(), StatusCode::kIoError);
  EXPECT_EQ(StatDisk(pattern).status().code(), StatusCode::kIoError);
  EXPECT_EQ(FreeBytes(pattern).status().code(), StatusCode::kIoError);
}

TEST(DiskSpaceTest, NoSpaceErrorsAreRecognisedByTheirText) {
  EXPECT_TRUE(IsNoSpaceError(Status::IoError(std::string("x: ") + std::strerror(ENOSPC))));
  EXPECT_TRUE(IsNoSpaceError(Status::IoError(std::string("x: ") + std::strerror(EDQUOT))));
  EXPECT_FALSE(IsNoSpaceError(Status::IoError(std::string("x: ") + std::strerror(EIO))));
}

}  // namespace
}  // namespace gpool
