// The compute share, measured: `busy` kernels of a known duration on the
// fake driver (which runs them on the host, so kernel time is wall time the
// fake counts itself), launched back to back; the fraction of wall time
// they ran is the task's GPU time share.
#include <gtest/gtest.h>

#include "worker/cuda/cuda_test_support.h"
#include "worker/cuda/ledger.h"

namespace gpool::cuda {
namespace {

using testing::CudaTask;
using testing::kAsanAnyOrder;
using testing::kAsIfLinked;
using testing::ValueOf;

TEST(CudaThrottle, FixedShareHoldsItsShareOverFiveSeconds) {
  CudaTask task;
  const auto r = task.Run({"ledger", "GPOOL_GPU_COMPUTE_PCT=30", "GPOOL_SHARING_QOS=fixed-share"},
                          {"busy", "2000", "5000", "0.20", "0.40"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Every launch entry point is governed: its kernel time reaches the ledger.
TEST(CudaThrottle, EveryLaunchEntryPointIsMeasured) {
  CudaTask task;
  auto check = task.Start({"ledger", "GPOOL_GPU_COMPUTE_PCT=50", "GPOOL_SHARING_QOS=fixed-share"},
                          {"variants", "2000", "hold"});
  ASSERT_NE(check.ReadUntil("held").find("held"), std::string::npos);
  const LedgerTotals totals = ReadLedger(task.ledger().c_str());
  EXPECT_TRUE(totals.ok);
  // Six 2 ms kernels and two (empty) graphs; each measured from just before
  // to just after it ran.
  EXPECT_EQ(totals.launches[0], 8u);
  EXPECT_GE(totals.busy_ns[0], 6 * 2'000'000u);
  EXPECT_LT(totals.busy_ns[0], 6 * 2'000'000u + 50'000'000u);
  EXPECT_EQ(check.Finish().exit_code, 0);
}

// A driver whose _ptsz launches call cuLaunchKernel by name reaches the
// interposer again in a program linked with -lcuda: each kernel is
// still measured once (eight governed launches, not eleven).
TEST(CudaThrottle, ADriverCallingItselfIsMeasuredOnce) {
  CudaTask task;
  auto check = task.Start({"ledger", kAsIfLinked, kAsanAnyOrder, "GPOOL_GPU_COMPUTE_PCT=50", "GPOOL_SHARING_QOS=fixed-share"},
                          {"variants", "2000", "hold"});
  ASSERT_NE(check.ReadUntil("held").find("held"), std::string::npos);
  const LedgerTotals totals = ReadLedger(task.ledger().c_str());
  EXPECT_EQ(totals.launches[0], 8u);  // six kernels, two graphs
  EXPECT_GE(totals.busy_ns[0], 6 * 2'000'000u);
  EXPECT_EQ(check.Finish().exit_code, 0);
}

TEST(CudaThrottle, WithoutAShareNothingIsThrottled) {
  CudaTask task;
  const auto r = task.Run({}, {"busy", "2000", "500"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(ValueOf(r.output, "busy_fraction"), 0.8) << r.output;
}

TEST(CudaThrottle, BestEffortIsNotThrottled) {
  CudaTask task;
  const auto r = task.Run({"ledger", "GPOOL_GPU_COMPUTE_PCT=30", "GPOOL_SHARING_QOS=best-effort"},
                          {"busy", "2000", "500"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(ValueOf(r.output, "busy_fraction"), 0.8) << r.output;
}

TEST(CudaThrottle, BurstShareExceedsItsShareWhenAlone) {
  CudaTask task;
  const auto r = task.Run({"ledger", "GPOOL_GPU_COMPUTE_PCT=30", "GPOOL_SHARING_QOS=burst-share"},
                          {"busy", "2000", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(ValueOf(r.output, "busy_fraction"), 0.6) << r.output;
}

// Another task launching on the same GPU (the fake's device 0 has one UUID
// for every process) takes the burst away.
TEST(CudaThrottle, BurstShareKeepsItsShareWhileAnotherTaskIsActive) {
  CudaTask burst;
  CudaTask neighbour;
  const std::string activity = "GPOOL_CUDA_ACTIVITY=" + burst.dir() + "/activity";
  auto other = neighbour.Start({"ledger", activity}, {"busy", "1000", "20", "busy", "1000", "3000"});
  // Once its first step has reported, the neighbour has launched (and so
  // published its activity) and keeps launching for 3 s.
  ASSERT_NE(other.ReadUntil("busy_fraction").find("busy_fraction"), std::string::npos);
  const auto r = burst.Run({"ledger", activity, "GPOOL_GPU_COMPUTE_PCT=30", "GPOOL_SHARING_QOS=burst-share"},
                           {"busy", "2000", "2000"});
  const auto o = other.Finish();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(o.exit_code, 0) << o.output;
  const double fraction = ValueOf(r.output, "busy_fraction");
  EXPECT_GT(fraction, 0.15) << r.output;
  EXPECT_LT(fraction, 0.45) << r.output;
}

}  // namespace
}  // namespace gpool::cuda
