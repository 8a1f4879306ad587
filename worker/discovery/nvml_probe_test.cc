#include "worker/discovery/nvml_probe.h"

#include <stdlib.h>

#include <gtest/gtest.h>

#include "worker/test_util.h"

namespace gpool::worker {
namespace {

using testing::ScopedEnv;

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
  for (const auto& gpu : g) {
    EXPECT_EQ(gpu.mig_mode, "") << "MIG is off unless FAKE_NVML_MIG";
    EXPECT_TRUE(gpu.mig_instances.empty());
    EXPECT_EQ(gpu.compute_units, 108u);
  }
}

Result<std::vector<GpuInfo>> ProbeFake() {
  NvmlProbeOptions options;
  options.library = GPOOL_FAKE_NVML_PATH;
  return ProbeNvmlGpus(options);
}

TEST(NvmlProbeTest, MigOnReportsStaticInstances) {
  ScopedEnv mig("FAKE_NVML_MIG");
  auto gpus = ProbeFake();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  const GpuInfo& g0 = gpus->at(0);
  EXPECT_EQ(g0.mig_mode, "static");
  // Slot 1 is empty and slot 4 is a partial compute instance: both left out.
  ASSERT_EQ(g0.mig_instances.size(), 3u);
  EXPECT_EQ(g0.mig_instances[0], (MigDeviceInfo{"3g.40gb", 4, "MIG-fake-0-0"}));
  EXPECT_EQ(g0.mig_instances[1], (MigDeviceInfo{"1g.10gb", 0, "MIG-fake-0-2"}));
  EXPECT_EQ(g0.mig_instances[2], (MigDeviceInfo{"1g.10gb", 1, "MIG-fake-0-3"}));
  EXPECT_EQ(gpus->at(1).mig_mode, "") << "MIG-capable, but off";
  EXPECT_EQ(gpus->at(2).mig_mode, "") << "not MIG-capable";
}

TEST(NvmlProbeTest, MigWithoutPlacementUsesGpuInstanceIdsAsStarts) {
  ScopedEnv mig("FAKE_NVML_MIG");
  ScopedEnv no_placement("FAKE_NVML_MIG_NO_PLACEMENT");
  auto gpus = ProbeFake();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  const auto& instances = gpus->at(0).mig_instances;
  ASSERT_EQ(instances.size(), 3u);
  // Profiles from the profile table by slices, memory and media engines
  // (1g.10gb, not 1g.10gb+me); starts are the GPU instance ids 1, 9, 10.
  EXPECT_EQ(instances[0], (MigDeviceInfo{"3g.40gb", 1, "MIG-fake-0-0"}));
  EXPECT_EQ(instances[1], (MigDeviceInfo{"1g.10gb", 9, "MIG-fake-0-2"}));
  EXPECT_EQ(instances[2], (MigDeviceInfo{"1g.10gb", 10, "MIG-fake-0-3"}));
}

TEST(NvmlProbeTest, MigWithoutProfileTableNamesProfilesFromAttributes) {
  ScopedEnv mig("FAKE_NVML_MIG");
  ScopedEnv no_profiles("FAKE_NVML_MIG_NO_PROFILES");
  auto gpus = ProbeFake();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  const auto& instances = gpus->at(0).mig_instances;
  ASSERT_EQ(instances.size(), 3u);
  EXPECT_EQ(instances[0].profile, "3g.40gb");  // 40192 MB: 39.25 GiB, rounded up
  EXPECT_EQ(instances[0].start, 4u);
  EXPECT_EQ(instances[1].profile, "1g.10gb");  // 9728 MB: 9.5 GiB
}

TEST(NvmlProbeTest, OldDriverWithoutMigSymbolsStillProbes) {
  ScopedEnv mig("FAKE_NVML_MIG");
  NvmlProbeOptions options;
  options.library = GPOOL_FAKE_NVML_OLD_PATH;
  auto gpus = ProbeNvmlGpus(options);
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 4u);
  EXPECT_EQ(gpus->at(0).uuid, "GPU-fake-0");
  EXPECT_EQ(gpus->at(0).mig_mode, "");
  EXPECT_EQ(gpus->at(0).compute_units, 0u);
  EXPECT_EQ(gpus->at(0).nvlink_peers, std::vector<uint32_t>{1});
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
