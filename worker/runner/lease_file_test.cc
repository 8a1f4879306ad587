#include "worker/runner/lease_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "worker/runner/atomic_file.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

TEST(LeaseFileTest, AWrittenDeadlineReadsBackAndAllowsRunningUntilIt) {
  testing::TempDir dir;
  const std::string path = LeasePath(dir.path());
  EXPECT_EQ(path, dir.path() + "/lease");
  const int64_t now = MonotonicNowMs();
  ASSERT_TRUE(WriteLease(path, now + 5'000).ok());
  auto deadline = ReadLease(path);
  ASSERT_TRUE(deadline.ok()) << deadline.status().ToString();
  EXPECT_EQ(*deadline, now + 5'000);
  EXPECT_TRUE(CheckLease(path, now).ok());
  EXPECT_TRUE(CheckLease(path, now + 4'999).ok());
  Status expired = CheckLease(path, now + 5'000);
  EXPECT_EQ(expired.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(expired.message().find("node lease expired"), std::string::npos) << expired.ToString();
  // A renewal replaces the deadline.
  ASSERT_TRUE(WriteLease(path, now + 10'000).ok());
  EXPECT_TRUE(CheckLease(path, now + 5'000).ok());
}

TEST(LeaseFileTest, AKeepingReaderRunsOnTheLastDeadlineItReadWhenTheFileCannotBeRead) {
  testing::TempDir dir;
  const std::string path = LeasePath(dir.path());
  const int64_t now = MonotonicNowMs();
  int64_t known = 0;
  EXPECT_EQ(CheckLeaseKeepingLast(path, now, &known).code(), StatusCode::kNotFound);  // none read yet
  ASSERT_TRUE(WriteLease(path, now + 5'000).ok());
  EXPECT_TRUE(CheckLeaseKeepingLast(path, now, &known).ok());
  EXPECT_EQ(known, now + 5'000);
  // Unreadable for a moment: the deadline already read still holds...
  ASSERT_TRUE(WriteFileAtomic(path, "garbage\n", /*sync=*/false).ok());
  EXPECT_TRUE(CheckLeaseKeepingLast(path, now + 4'999, &known).ok());
  // ...and runs out like the file would have, naming what went wrong.
  Status expired = CheckLeaseKeepingLast(path, now + 5'000, &known);
  EXPECT_EQ(expired.code(), StatusCode::kMalformed) << expired.ToString();
  // A renewal read later extends it; an expiry reads as one.
  ASSERT_TRUE(WriteLease(path, now + 9'000).ok());
  EXPECT_TRUE(CheckLeaseKeepingLast(path, now + 8'999, &known).ok());
  Status passed = CheckLeaseKeepingLast(path, now + 9'000, &known);
  EXPECT_EQ(passed.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(passed.message().find("node lease expired"), std::string::npos) << passed.ToString();
}

TEST(LeaseFileTest, ALeaseIsStillRenewedWhenNoNewFileCanBeWritten) {
  testing::TempDir dir;
  const std::string path = LeasePath(dir.path());
  const int64_t now = MonotonicNowMs();
  ASSERT_TRUE(WriteLease(path, now + 5'000).ok());
  // The atomic replace cannot create its temp file (as on a full disk).
  std::filesystem::create_directory(path + ".tmp." + std::to_string(getpid()));
  ASSERT_TRUE(WriteLease(path, now + 123'456'789).ok());
  EXPECT_EQ(ReadLease(path).value(), now + 123'456'789);
  ASSERT_TRUE(WriteLease(path, now + 7'000).ok());  // shorter: the padding keeps the size
  EXPECT_EQ(ReadLease(path).value(), now + 7'000);
  EXPECT_EQ(std::filesystem::file_size(path), 128u);
}

TEST(LeaseFileTest, ARenewalCountsFromTheSendAndNeverMovesTheDeadlineBack) {
  testing::TempDir dir;
  const std::string path = LeasePath(dir.path());
  const int64_t sent = MonotonicNowMs();
  auto first = RenewLease(path, sent, 10'000);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, sent + 10'000);
  // The acknowledgement of an older heartbeat arrives late.
  auto late = RenewLease(path, sent - 5'000, 10'000);
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(*late, sent + 10'000);
  EXPECT_EQ(*ReadLease(path), sent + 10'000);
  auto next = RenewLease(path, sent + 1'000, 10'000);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*ReadLease(path), sent + 11'000);
}

TEST(LeaseFileTest, AbsentOrMalformedLeasesDoNotAllowRunning) {
  testing::TempDir dir;
  const std::string path = LeasePath(dir.path());
  EXPECT_EQ(CheckLease(path, MonotonicNowMs()).code(), StatusCode::kNotFound);
  ASSERT_TRUE(WriteFileAtomic(path, "deadline_mono_ms=99999999999\n").ok());
  EXPECT_EQ(CheckLease(path, MonotonicNowMs()).code(), StatusCode::kMalformed);
  ASSERT_TRUE(WriteFileAtomic(path, "gpool-lease v1 deadline_mono_ms=12x\n").ok());
  EXPECT_EQ(CheckLease(path, MonotonicNowMs()).code(), StatusCode::kMalformed);
}

TEST(LeaseFileTest, ALeaseOfAnotherBootDoesNotAllowRunning) {
  testing::TempDir dir;
  const std::string path = LeasePath(dir.path());
  ASSERT_TRUE(WriteFileAtomic(path, "gpool-lease v1 deadline_mono_ms=" + std::to_string(MonotonicNowMs() + 60'000) +
                                        " boot_id=00000000-0000-0000-0000-000000000000\n")
                  .ok());
  EXPECT_EQ(CheckLease(path, MonotonicNowMs()).code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gpool::worker
