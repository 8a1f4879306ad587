#include "worker/discovery/nvml_probe.h"

#include <stdlib.h>

#include <gtest/gtest.h>

#include "worker/test_util.h"

namespace gpool::worker {
namespace {

TEST(NvmlProbeTest, MissingLibraryIsNotFound) {
  NvmlProbeOptions options;
  options.library = "libnvidia-ml-does-not-exist.so.1";
  auto gpus = ProbeNvmlGpus(options);
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), StatusCode::kNotFound);
  EXPECT_NE(gpus.status().message().find("libnvidia-ml-does-not-exist.so.1"), std::string::npos);
  EXPECT_EQ(gpus.status().message().find('\n'), std::string::npos) << "one line";
}

TEST(NvmlProbeTest, LibraryWithoutNvmlSymbolsIsUnavailable) {
  NvmlProbeOptions options;
  options.library = "libc.so.6";
  auto gpus = ProbeNvmlGpus(options);
  EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
}

TEST(NvmlProbeTest, ReadsGpusNumaAndNvlinkFromFakeLibrary) {
  testing::TempDir sys;
  sys.Write("bus/pci/devices/0000:3b:00.0/numa_node", "0\n");
  sys.Write("bus/pci/devices/0000:3c:00.0/numa_node", "1\n");
  sys.Write("bus/pci/devices/0000:5d:00.0/numa_node", "-1\n");
  NvmlProbeOptions options;
  options.library = GPOOL_FAKE_NVML_PATH;
  options.sys_root = sys.path();
  auto gpus = ProbeNvmlGpus(options);
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 4u);
  const auto& g = *gpus;
  EXPECT_EQ(g[0].index, 0u);
  EXPECT_EQ(g[0].uuid, "GPU-fake-0");
  EXPECT_EQ(g[0].model, "NVIDIA-A100-SXM4-80GB-1");
  EXPECT_EQ(g[0].vendor, "nvidia");
  EXPECT_EQ(g[0].memory_mib, 80u * 1024);
  EXPECT_EQ(g[0].numa, 0);
  EXPECT_EQ(g[1].numa, 1);
  EXPECT_EQ(g[2].numa, -1);
  EXPECT_EQ(g[3].numa, -1);
  EXPECT_EQ(g[0].nvlink_peers, std::vector<uint32_t>{1});
  EXPECT_EQ(g[1].nvlink_peers, std::vector<uint32_t>{0});
  EXPECT_EQ(g[2].nvlink_peers, std::vector<uint32_t>{3});  // via the NVSwitch
  EXPECT_EQ(g[3].nvlink_peers, std::vector<uint32_t>{2});
}

TEST(NvmlProbeTest, InitFailureIsUnavailable) {
  setenv("FAKE_NVML_INIT_FAIL", "1", 1);
  NvmlProbeOptions options;
  options.library = GPOOL_FAKE_NVML_PATH;
  auto gpus = ProbeNvmlGpus(options);
  unsetenv("FAKE_NVML_INIT_FAIL");
  EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(gpus.status().message().find("Driver Not Loaded"), std::string::npos);
}

}  // namespace
}  // namespace gpool::worker
