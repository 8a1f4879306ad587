#include "worker/discovery/nvml_mig_manager.h"

#include <stdlib.h>

#include <gtest/gtest.h>

#include "worker/discovery/nvml_probe.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

using testing::ScopedEnv;

std::unique_ptr<NvmlMigManager> OpenFake(const char* path = GPOOL_FAKE_NVML_PATH) {
  auto manager = NvmlMigManager::Open(path);
  EXPECT_TRUE(manager.ok()) << manager.status().ToString();
  return manager.ok() ? std::move(manager.value()) : nullptr;
}

bool Contains(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

TEST(NvmlMigManagerTest, CreatesThenDestroysAnInstance) {
  ScopedEnv dynamic("FAKE_NVML_MIG_DYNAMIC");
  auto mig = OpenFake();
  ASSERT_NE(mig, nullptr);
  auto uuid = mig->Create(1, "1g.10gb", 0);
  ASSERT_TRUE(uuid.ok()) << uuid.status().ToString();
  EXPECT_EQ(*uuid, "MIG-fake-1-1");

  // NVML's own view (the probe) now has the instance, as a task would see it.
  NvmlProbeOptions probe;
  probe.library = GPOOL_FAKE_NVML_PATH;
  auto gpus = ProbeNvmlGpus(probe);
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->at(1).mig_instances.size(), 1u);
  EXPECT_EQ(gpus->at(1).mig_instances[0].profile, "1g.10gb");
  EXPECT_EQ(gpus->at(1).mig_instances[0].start, 0u);
  EXPECT_EQ(gpus->at(1).mig_instances[0].uuid, "MIG-fake-1-1");

  ASSERT_TRUE(mig->Destroy(1, "1g.10gb", 0).ok());
  gpus = ProbeNvmlGpus(probe);
  ASSERT_TRUE(gpus.ok());
  EXPECT_TRUE(gpus->at(1).mig_instances.empty());
  EXPECT_TRUE(mig->Destroy(1, "1g.10gb", 0).ok()) << "destroying what is gone is not an error";
  auto again = mig->Create(1, "1g.10gb", 0);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, "MIG-fake-1-2") << "a new GPU instance once the first is gone";
}

TEST(NvmlMigManagerTest, CreatingTwiceAtOnePlacementReusesTheInstance) {
  ScopedEnv dynamic("FAKE_NVML_MIG_DYNAMIC");
  auto mig = OpenFake();
  ASSERT_NE(mig, nullptr);
  auto first = mig->Create(1, "3g.40gb", 4);
  auto second = mig->Create(1, "3g.40gb", 4);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(*first, *second);
  EXPECT_TRUE(mig->Destroy(1, "3g.40gb", 4).ok());
}

TEST(NvmlMigManagerTest, OverlappingPlacementIsResourceExhausted) {
  ScopedEnv dynamic("FAKE_NVML_MIG_DYNAMIC");
  auto mig = OpenFake();
  ASSERT_NE(mig, nullptr);
  ASSERT_TRUE(mig->Create(1, "3g.40gb", 0).ok());  // spans memory slices 0-3
  auto overlap = mig->Create(1, "1g.10gb", 2);
  ASSERT_FALSE(overlap.ok());
  EXPECT_EQ(overlap.status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(overlap.status(), "nvmlDeviceCreateGpuInstanceWithPlacement failed"))
      << overlap.status().ToString();
  EXPECT_TRUE(Contains(overlap.status(), "(23)")) << overlap.status().ToString();
  EXPECT_TRUE(Contains(overlap.status(), "GPU 1, MIG instance 1g.10gb at start 2")) << overlap.status().ToString();
}

TEST(NvmlMigManagerTest, MigModeOffTellsTheOperatorToEnableIt) {
  auto mig = OpenFake();
  ASSERT_NE(mig, nullptr);
  auto uuid = mig->Create(1, "1g.10gb", 0);
  ASSERT_FALSE(uuid.ok());
  EXPECT_EQ(uuid.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(uuid.status(), "GPU 1 has MIG mode disabled")) << uuid.status().ToString();
  EXPECT_TRUE(Contains(uuid.status(), "nvidia-smi -i 1 -mig 1")) << uuid.status().ToString();
  // A GPU without MIG at all says so too.
  auto no_mig = mig->Create(2, "1g.10gb", 0);
  EXPECT_EQ(no_mig.status().code(), StatusCode::kFailedPrecondition);
}

TEST(NvmlMigManagerTest, OldDriverWithoutMigControlIsFailedPrecondition) {
  auto mig = OpenFake(GPOOL_FAKE_NVML_OLD_PATH);
  ASSERT_NE(mig, nullptr);
  auto uuid = mig->Create(1, "1g.10gb", 0);
  ASSERT_FALSE(uuid.ok());
  EXPECT_EQ(uuid.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(uuid.status(), "nvmlDeviceCreateGpuInstanceWithPlacement")) << uuid.status().ToString();
  EXPECT_EQ(mig->Destroy(1, "1g.10gb", 0).code(), StatusCode::kFailedPrecondition);
}

TEST(NvmlMigManagerTest, UnknownProfileOrStartIsInvalidArgument) {
  ScopedEnv dynamic("FAKE_NVML_MIG_DYNAMIC");
  auto mig = OpenFake();
  ASSERT_NE(mig, nullptr);
  auto profile = mig->Create(1, "9g.90gb", 0);
  EXPECT_EQ(profile.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(profile.status(), "no MIG profile 9g.90gb (it has 1g.10gb, 2g.20gb"))
      << profile.status().ToString();
  auto start = mig->Create(1, "3g.40gb", 2);  // 3g placements start at 0 or 4
  EXPECT_EQ(start.status().code(), StatusCode::kInvalidArgument);
}

TEST(NvmlMigManagerTest, NoPermissionNamesTheNeededPrivilege) {
  ScopedEnv dynamic("FAKE_NVML_MIG_DYNAMIC");
  ScopedEnv no_permission("FAKE_NVML_MIG_NO_PERMISSION");
  auto mig = OpenFake();
  ASSERT_NE(mig, nullptr);
  auto uuid = mig->Create(1, "1g.10gb", 0);
  EXPECT_EQ(uuid.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(uuid.status(), "CAP_SYS_ADMIN")) << uuid.status().ToString();
}

}  // namespace
}  // namespace gpool::worker
