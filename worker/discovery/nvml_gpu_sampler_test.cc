#include "worker/discovery/nvml_gpu_sampler.h"

#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace gpool::worker {
namespace {

class NvmlGpuSamplerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("FAKE_NVML_UTILIZATION");
    unsetenv("FAKE_NVML_HEALTH_FILE");
  }
};

TEST_F(NvmlGpuSamplerTest, ReadsUtilisationAndMemoryPerGpu) {
  setenv("FAKE_NVML_UTILIZATION", "0:37:2048,2:100:81920", 1);
  auto sampler = NvmlGpuSampler::Open(GPOOL_FAKE_NVML_PATH);
  ASSERT_TRUE(sampler.ok()) << sampler.status().ToString();
  const std::vector<GpuSample> samples = (*sampler)->Sample();
  ASSERT_EQ(samples.size(), 4u);  // the fake has four GPUs
  EXPECT_TRUE(samples[0].known);
  EXPECT_EQ(samples[0].utilization_pct, 37u);
  EXPECT_EQ(samples[0].memory_used_bytes, 2048ull << 20);
  EXPECT_EQ(samples[0].memory_total_bytes, 80ull << 30);
  EXPECT_EQ(samples[1].utilization_pct, 0u);  // not listed: idle
  EXPECT_EQ(samples[2].utilization_pct, 100u);
  // Read at every call, as a real GPU's figures change.
  setenv("FAKE_NVML_UTILIZATION", "0:5:0", 1);
  EXPECT_EQ((*sampler)->Sample()[0].utilization_pct, 5u);
}

TEST_F(NvmlGpuSamplerTest, ALostGpuIsUnknownNotIdle) {
  char path[] = "/tmp/gpool-gpu-sampler-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "lost 1\n", 7), 7);
  close(fd);
  setenv("FAKE_NVML_HEALTH_FILE", path, 1);
  auto sampler = NvmlGpuSampler::Open(GPOOL_FAKE_NVML_PATH);
  ASSERT_TRUE(sampler.ok());
  const std::vector<GpuSample> samples = (*sampler)->Sample();
  unlink(path);
  ASSERT_EQ(samples.size(), 4u);
  EXPECT_TRUE(samples[0].known);
  EXPECT_FALSE(samples[1].known);
}

TEST_F(NvmlGpuSamplerTest, AMissingLibraryIsAnError) {
  EXPECT_FALSE(NvmlGpuSampler::Open("/nonexistent/libnvidia-ml.so.1").ok());
}

}  // namespace
}  // namespace gpool::worker
