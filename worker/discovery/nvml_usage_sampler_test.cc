#include "worker/discovery/nvml_usage_sampler.h"

#include <stdlib.h>

#include <gtest/gtest.h>

#include "worker/test_util.h"

namespace gpool::worker {
namespace {

using testing::ScopedEnv;

constexpr uint64_t kMiB = 1024 * 1024;

class NvmlUsageSamplerTest : public ::testing::Test {
 protected:
  std::unique_ptr<NvmlUsageSampler> Open(const std::string& library = GPOOL_FAKE_NVML_PATH) {
    NvmlUsageSamplerOptions options;
    options.library = library;
    options.logger = log_.logger();
    auto sampler = NvmlUsageSampler::Open(std::move(options));
    EXPECT_TRUE(sampler.ok()) << sampler.status().ToString();
    return sampler.ok() ? std::move(sampler.value()) : nullptr;
  }
  size_t Count(const std::string& needle) const {
    const std::string text = log_.text();
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  }

  testing::CapturedLog log_;
};

TEST_F(NvmlUsageSamplerTest, SumsEachPidOverGpusThenRoundsUp) {
  // pid 100: 1.5 MiB on GPU 0 and on GPU 1 is 3 MiB (rounding per GPU
  // would say 4); pid 300's single byte is 1 MiB.
  ScopedEnv procs("FAKE_NVML_PROCESSES", "0:100:" + std::to_string(3 * kMiB / 2) + ",1:100:" +
                                             std::to_string(3 * kMiB / 2) + ",2:200:" + std::to_string(kMiB) +
                                             ",0:200:" + std::to_string(2 * kMiB) + ",3:300:1");
  auto sampler = Open();
  ASSERT_NE(sampler, nullptr);
  EXPECT_EQ(sampler->entry_point(), "nvmlDeviceGetComputeRunningProcesses_v3");
  EXPECT_EQ(sampler->Sample(), (std::map<int64_t, uint64_t>{{100, 3}, {200, 3}, {300, 1}}));
}

TEST_F(NvmlUsageSamplerTest, NoProcessesIsAnEmptySample) {
  auto sampler = Open();
  ASSERT_NE(sampler, nullptr);
  EXPECT_TRUE(sampler->Sample().empty());
  EXPECT_EQ(Count("failed"), 0u);
}

TEST_F(NvmlUsageSamplerTest, ListThatGrewAfterTheSizingCallIsAskedAgain) {
  // The sizing answer says 2; the next call finds 3 and says so.
  ScopedEnv procs("FAKE_NVML_PROCESSES", "1:10:1048576,1:11:2097152,1:12:3145728");
  ScopedEnv race("FAKE_NVML_PROCESSES_RACE", "1");
  auto sampler = Open();
  ASSERT_NE(sampler, nullptr);
  EXPECT_EQ(sampler->Sample(), (std::map<int64_t, uint64_t>{{10, 1}, {11, 2}, {12, 3}}));
}

TEST_F(NvmlUsageSamplerTest, ListThatNeverFitsGivesAnEmptySampleLoggedOnceUntilItWorks) {
  ScopedEnv procs("FAKE_NVML_PROCESSES", "0:10:1048576");
  auto sampler = Open();
  ASSERT_NE(sampler, nullptr);
  {
    ScopedEnv endless("FAKE_NVML_PROCESSES_ENDLESS", "1");
    EXPECT_TRUE(sampler->Sample().empty());
    EXPECT_TRUE(sampler->Sample().empty());
  }
  EXPECT_EQ(Count("info gpu usage sample failed"), 1u) << log_.text();
  EXPECT_EQ(Count("debug gpu usage sample failed"), 1u) << log_.text();
  EXPECT_EQ(sampler->Sample(), (std::map<int64_t, uint64_t>{{10, 1}}));
  EXPECT_TRUE(log_.Contains("gpu usage sampling works again")) << log_.text();
}

TEST_F(NvmlUsageSamplerTest, OneFailingGpuEmptiesTheSample) {
  // A task on GPU 2 would otherwise be under-reported.
  ScopedEnv procs("FAKE_NVML_PROCESSES", "0:10:1048576,2:10:1048576");
  ScopedEnv fail("FAKE_NVML_PROCESSES_FAIL", "2");
  auto sampler = Open();
  ASSERT_NE(sampler, nullptr);
  EXPECT_TRUE(sampler->Sample().empty());
  EXPECT_TRUE(log_.Contains("GPU 2")) << log_.text();
}

TEST_F(NvmlUsageSamplerTest, WithheldUsageIsSkippedAndLoggedOnce) {
  ScopedEnv procs("FAKE_NVML_PROCESSES", "0:10:na,0:20:1048576,1:10:na");
  auto sampler = Open();
  ASSERT_NE(sampler, nullptr);
  EXPECT_EQ(sampler->Sample(), (std::map<int64_t, uint64_t>{{20, 1}}));
  EXPECT_EQ(sampler->Sample(), (std::map<int64_t, uint64_t>{{20, 1}}));
  EXPECT_EQ(Count("withheld"), 1u) << log_.text();
}

TEST_F(NvmlUsageSamplerTest, DriverWithoutProcessQueryGivesEmptySamples) {
  ScopedEnv procs("FAKE_NVML_PROCESSES", "0:10:1048576");
  auto sampler = Open(GPOOL_FAKE_NVML_OLD_PATH);
  ASSERT_NE(sampler, nullptr);
  EXPECT_EQ(sampler->entry_point(), "");
  EXPECT_TRUE(sampler->Sample().empty());
  EXPECT_TRUE(sampler->Sample().empty());
  EXPECT_EQ(Count("no per-process query"), 1u) << log_.text();
}

TEST_F(NvmlUsageSamplerTest, UnsuffixedQueryUsesTheShortStruct) {
  // With the v2 layout the second entry's pid would be read from the
  // first's padding: the sums show the stride is right.
  ScopedEnv procs("FAKE_NVML_PROCESSES", "0:10:1048576,0:11:2097152,1:10:1048576");
  auto sampler = Open(GPOOL_FAKE_NVML_V1_PATH);
  ASSERT_NE(sampler, nullptr);
  EXPECT_EQ(sampler->entry_point(), "nvmlDeviceGetComputeRunningProcesses");
  EXPECT_EQ(sampler->Sample(), (std::map<int64_t, uint64_t>{{10, 2}, {11, 2}}));
}

TEST_F(NvmlUsageSamplerTest, MissingLibraryOrDriverFailsOpen) {
  NvmlUsageSamplerOptions options;
  options.library = "libnvidia-ml-does-not-exist.so.1";
  EXPECT_EQ(NvmlUsageSampler::Open(options).status().code(), StatusCode::kNotFound);
  ScopedEnv no_driver("FAKE_NVML_INIT_FAIL", "1");
  options.library = GPOOL_FAKE_NVML_PATH;
  EXPECT_EQ(NvmlUsageSampler::Open(options).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace gpool::worker
