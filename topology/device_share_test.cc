// ApplyGrant is the one rule by which a grant loads a device, for the
// scheduler's session, the simulator and the state machine alike.
#include "topology/device_share.h"

#include <gtest/gtest.h>

namespace gpool::topology {
namespace {

GpuSlot Device(uint32_t index, uint32_t cores = 0, std::string mig_mode = "") {
  GpuSlot gpu;
  gpu.index = index;
  gpu.model = "A100";
  gpu.memory_mib = 81920;
  gpu.cores = cores;
  gpu.cores_used.assign(cores, false);
  gpu.mig_mode = std::move(mig_mode);
  return gpu;
}

bool SameLoad(const DeviceLoad& a, const DeviceLoad& b) {
  return a.tenants == b.tenants && a.memory_used_mib == b.memory_used_mib && a.compute_used_pct == b.compute_used_pct &&
         a.qos == b.qos && a.cores_used == b.cores_used && a.mig.size() == b.mig.size();
}

TEST(ApplyGrantTest, ASharesLoadIsTakenBackByItsRemoval) {
  const GpuSlot gpu = Device(0);
  const DeviceLoad before = DeviceLoad::Of(gpu);
  DeviceLoad load = before;
  DeviceGrant share{.shared = true, .gpu_memory_mib = 20480, .gpu_compute_pct = 30, .sharing_qos = "fixed-share"};
  ApplyGrant(load, gpu, share, true);
  EXPECT_EQ(load.tenants, 1u);
  EXPECT_EQ(load.memory_used_mib, 20480u);
  EXPECT_EQ(load.compute_used_pct, 30u);
  EXPECT_EQ(load.qos, "fixed-share");
  EXPECT_FALSE(WholeFree(gpu, load));
  ApplyGrant(load, gpu, share, false);
  EXPECT_TRUE(SameLoad(load, before));
  EXPECT_TRUE(WholeFree(gpu, load));
}

TEST(ApplyGrantTest, CoresOfThisDeviceAreHeldAndOthersSkipped) {
  const GpuSlot gpu = Device(1, 4);  // node-wide cores 4..7
  DeviceLoad load = DeviceLoad::Of(gpu);
  const DeviceGrant cores{.cores = {3, 5, 6, 8}};
  ApplyGrant(load, gpu, cores, true);
  EXPECT_EQ(load.cores_used, (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(load.tenants, 1u);
  EXPECT_FALSE(WholeFree(gpu, load)) << "a device with cores in use is not free to hold whole";
  ApplyGrant(load, gpu, cores, false);
  EXPECT_TRUE(SameLoad(load, DeviceLoad::Of(gpu)));
  EXPECT_TRUE(WholeFree(gpu, load));
}

TEST(ApplyGrantTest, ADynamicMigInstanceGoesWithItsTenantAStaticOneStays) {
  const DeviceGrant mig{.mig_profile = "3g.40gb", .mig_start = 4};
  GpuSlot dynamic = Device(0, 0, "dynamic");
  DeviceLoad load = DeviceLoad::Of(dynamic);
  ApplyGrant(load, dynamic, mig, true);
  ASSERT_EQ(load.mig.size(), 1u);
  EXPECT_TRUE(load.mig[0].used);
  EXPECT_EQ(load.tenants, 1u);
  ApplyGrant(load, dynamic, mig, false);
  EXPECT_TRUE(load.mig.empty());
  EXPECT_EQ(load.tenants, 0u);

  GpuSlot fixed = Device(0, 0, "static");
  fixed.mig = {MigSlot{"3g.40gb", 4, false}};
  load = DeviceLoad::Of(fixed);
  ApplyGrant(load, fixed, mig, true);
  ASSERT_EQ(load.mig.size(), 1u);
  EXPECT_TRUE(load.mig[0].used);
  ApplyGrant(load, fixed, mig, false);
  ASSERT_EQ(load.mig.size(), 1u);
  EXPECT_FALSE(load.mig[0].used);
}

TEST(ApplyGrantTest, AWholeDeviceIsNotALoad) {
  const GpuSlot gpu = Device(0);
  DeviceLoad load = DeviceLoad::Of(gpu);
  ApplyGrant(load, gpu, DeviceGrant{}, true);
  EXPECT_TRUE(SameLoad(load, DeviceLoad::Of(gpu)));
}

TEST(ApplyGrantTest, WriteToIsTheInverseOfOf) {
  GpuSlot gpu = Device(0, 2);
  DeviceLoad load = DeviceLoad::Of(gpu);
  ApplyGrant(load, gpu, DeviceGrant{.cores = {1}}, true);
  load.WriteTo(gpu);
  EXPECT_TRUE(SameLoad(DeviceLoad::Of(gpu), load));
}

}  // namespace
}  // namespace gpool::topology
