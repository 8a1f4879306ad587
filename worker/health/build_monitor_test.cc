// Which checks gpool-worker runs for which node (build_monitor.h): GPU checks
// on a --spec node only with an explicit --nvml-library, NVML device i then
// being the spec's i-th GPU; none at all with --health off.
#include "worker/health/build_monitor.h"

#include <algorithm>
#include <fstream>

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "worker/health/gpu_repair.h"
#include "worker/health/service_check.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

class BuildMonitorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (uint32_t i = 0; i < 2; ++i) {
      GpuInfo gpu;
      gpu.index = 10 + i;  // not NVML's numbering: the spec's
      gpu.uuid = "GPU-sim-" + std::to_string(i);
      node_.gpus.push_back(gpu);
    }
    node_.name = "sim";
    flags_.spec_path = dir_.path() + "/node.yaml";
    flags_.data_dir = dir_.path();
    flags_.health.sysfs_root = dir_.path() + "/sys";  // empty: no NICs
    flags_.health.disk_min_free_mib = 1;              // whatever the test machine has free
    faults_ = dir_.path() + "/faults";
    std::ofstream(faults_) << "";
  }
  std::unique_ptr<HealthMonitor> Build() {
    return BuildHealthMonitor(flags_, node_, &clock_, [] { return int64_t{0}; }, log_.logger());
  }

  testing::TempDir dir_;
  std::string faults_;
  NodeSpec node_;
  WorkerFlags flags_;
  FakeClock clock_;
  testing::CapturedLog log_;
};

TEST_F(BuildMonitorTest, OffBuildsNothing) {
  flags_.health.enabled = false;
  EXPECT_EQ(Build(), nullptr);
}

TEST_F(BuildMonitorTest, ASpecNodesGpusAreNotTheHostsUnlessALibraryIsNamed) {
  flags_.nvml_library = GPOOL_FAKE_NVML_PATH;
  flags_.nvml_library_given = false;  // the default library, not named
  auto monitor = Build();
  ASSERT_NE(monitor, nullptr);
  EXPECT_EQ(monitor->checks(), 2u) << "NIC and node services only";
}

TEST_F(BuildMonitorTest, ANamedLibraryWatchesTheSpecsGpusInOrder) {
  testing::ScopedEnv env("FAKE_NVML_HEALTH_FILE", faults_);
  flags_.nvml_library = GPOOL_FAKE_NVML_PATH;
  flags_.nvml_library_given = true;
  flags_.health.xid_interval_ms = 50;
  auto monitor = Build();
  ASSERT_NE(monitor, nullptr);
  EXPECT_EQ(monitor->checks(), 4u);
  monitor->Poll();
  std::ofstream(faults_, std::ios::app) << "xid 1 79\n";
  clock_.Advance(50);
  monitor->Poll();
  ASSERT_EQ(monitor->conditions().size(), 1u);
  EXPECT_EQ(monitor->conditions()[0].device, "gpu/11") << "NVML device 1 is the spec's second GPU";
  EXPECT_EQ(monitor->conditions()[0].severity, "fatal");
}

// Self-repair (issue 50): a --spec node's GPUs get the repair only with a
// reset command named (they are not the host's), never without a way to
// tell whether a task holds a GPU, and not on a node labelled off.
TEST_F(BuildMonitorTest, TheGpuRepairNeedsACommandOnASpecNodeAndYieldsToItsLabel) {
  testing::ScopedEnv env("FAKE_NVML_HEALTH_FILE", faults_);
  flags_.nvml_library = GPOOL_FAKE_NVML_PATH;
  flags_.nvml_library_given = true;
  const auto held = [](uint32_t) { return false; };
  auto build = [&](std::function<bool(uint32_t)> gpu_held) {
    return BuildHealthMonitor(flags_, node_, &clock_, [] { return int64_t{0}; }, log_.logger(), gpu_held);
  };
  EXPECT_EQ(build(held)->checks(), 4u) << "no command: no repair of a simulated node's GPUs";
  flags_.health.gpu_reset_command = "/opt/fake/reset --gpu {index}";
  EXPECT_EQ(build(held)->checks(), 5u);
  EXPECT_EQ(build(nullptr)->checks(), 4u) << "no one to ask whether a task holds the GPU";
  flags_.health.gpu_reset = false;
  EXPECT_EQ(build(held)->checks(), 4u);
  flags_.health.gpu_reset = true;
  // The label is read at each run, not at build (an operator may set or
  // remove it at runtime; gpu_repair_test.cc): without a query, the spec's.
  node_.labels["repair.gpool.io/gpu-reset"] = "off";
  auto monitor = build(held);
  EXPECT_EQ(monitor->checks(), 5u);
  monitor->Poll();
  EXPECT_TRUE(log_.Contains("gpu self-repair off by node label")) << log_.text();
}

// What the worker passes (its LabelOverlay) is what the repair asks.
TEST_F(BuildMonitorTest, TheGpuRepairAsksTheLabelQueryItIsGiven) {
  testing::ScopedEnv env("FAKE_NVML_HEALTH_FILE", faults_);
  flags_.nvml_library = GPOOL_FAKE_NVML_PATH;
  flags_.nvml_library_given = true;
  flags_.health.gpu_reset_command = "/opt/fake/reset --gpu {index}";
  node_.labels["repair.gpool.io/gpu-reset"] = "off";  // the query, not the spec, decides
  std::vector<std::string> asked;
  auto monitor = BuildHealthMonitor(
      flags_, node_, &clock_, [] { return int64_t{0}; }, log_.logger(), [](uint32_t) { return false; },
      [&asked](std::string_view label) {
        asked.emplace_back(label);
        return false;
      });
  monitor->Poll();
  EXPECT_NE(std::find(asked.begin(), asked.end(), kGpuResetLabel), asked.end());
  EXPECT_FALSE(log_.Contains("gpu self-repair off by node label")) << log_.text();
}

TEST(BuildMonitorRepairTest, TheResetCommandSplitsOnSpacesOrIsTheDefault) {
  EXPECT_EQ(GpuResetCommand(""), (std::vector<std::string>{"nvidia-smi", "--gpu-reset", "-i", "{index}"}));
  EXPECT_EQ(GpuResetCommand("  /opt/reset  -g {index} "), (std::vector<std::string>{"/opt/reset", "-g", "{index}"}));
}

TEST_F(BuildMonitorTest, SpecGpusPastTheLibrarysCountAreNotWatched) {
  testing::ScopedEnv env("FAKE_NVML_HEALTH_FILE", faults_);
  for (uint32_t i = 2; i < 8; ++i) {  // 8 GPUs; the fake has 4
    GpuInfo gpu;
    gpu.index = 10 + i;
    gpu.uuid = "GPU-sim-" + std::to_string(i);
    node_.gpus.push_back(gpu);
  }
  flags_.nvml_library = GPOOL_FAKE_NVML_PATH;
  flags_.nvml_library_given = true;
  auto monitor = Build();
  ASSERT_NE(monitor, nullptr);
  monitor->Poll();
  EXPECT_TRUE(monitor->conditions().empty()) << "not lost: never there";
  EXPECT_TRUE(log_.Contains("GPU health watches only the first GPUs of the spec"));
  std::ofstream(faults_, std::ios::app) << "lost 3\n";
  clock_.Advance(flags_.health.gpu_interval_ms);
  monitor->Poll();
  ASSERT_EQ(monitor->conditions().size(), 1u);
  EXPECT_EQ(monitor->conditions()[0].device, "gpu/13");
  EXPECT_EQ(monitor->conditions()[0].kind, "gpu-lost");
}

TEST_F(BuildMonitorTest, ALibraryThatDoesNotLoadLeavesTheOtherChecks) {
  flags_.nvml_library = dir_.path() + "/no-such-libnvidia-ml.so";
  flags_.nvml_library_given = true;
  auto monitor = Build();
  ASSERT_NE(monitor, nullptr);
  EXPECT_EQ(monitor->checks(), 2u);
  EXPECT_TRUE(log_.Contains("GPU health is not watched"));
}

TEST_F(BuildMonitorTest, ANodeWithoutNvidiaGpusHasNoGpuChecks) {
  for (auto& gpu : node_.gpus) gpu.vendor = "amd";
  flags_.nvml_library = GPOOL_FAKE_NVML_PATH;
  flags_.nvml_library_given = true;
  auto monitor = Build();
  ASSERT_NE(monitor, nullptr);
  EXPECT_EQ(monitor->checks(), 2u);
}

// Issue 50: devices a vendor tool found on the host are watched through it;
// a --spec node's (simulated) devices are not.
TEST_F(BuildMonitorTest, AHostWithVendorDevicesGetsTheirToolCheck) {
  for (auto& gpu : node_.gpus) gpu.vendor = "amd";
  flags_.spec_path.clear();
  auto monitor = Build();
  ASSERT_NE(monitor, nullptr);
  EXPECT_EQ(monitor->checks(), 3u);
  EXPECT_TRUE(log_.Contains("vendor health check on vendor=amd devices=2")) << log_.text();
}

}  // namespace
}  // namespace gpool::worker
