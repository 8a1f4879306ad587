// The GPU checks (gpu_checks.h) over the fake NVML, with faults injected
// through FAKE_NVML_HEALTH_FILE (worker/discovery/testdata/fake_nvml.cc).
#include "worker/health/gpu_checks.h"

#include <fstream>

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/health.h"
#include "worker/health/health_monitor.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

class GpuChecksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    faults_ = dir_.path() + "/faults";
    std::ofstream(faults_) << "";
    env_ = std::make_unique<testing::ScopedEnv>("FAKE_NVML_HEALTH_FILE", faults_);
    Build(GPOOL_FAKE_NVML_PATH, {0, 1, 2, 3});
  }
  // The checks over `library`, NVML device i named gpu/<indices[i]>. The
  // baselines (ECC count, active NVLinks) are taken here.
  void Build(const char* library, std::vector<uint32_t> indices) {
    monitor_.reset();  // the last NVML session ends: the fake forgets delivered XIDs
    auto nvml = NvmlLibrary::Open(library);
    ASSERT_TRUE(nvml.ok()) << nvml.status().ToString();
    GpuCheckOptions options;
    options.gpu_indices = std::move(indices);
    options.xid_hold_ms = 500;
    options.max_temp_c = 90;
    monitor_ = std::make_unique<HealthMonitor>(&clock_, log_.logger());
    for (auto& check : MakeGpuChecks(std::shared_ptr<NvmlLibrary>(std::move(nvml).value()), options, log_.logger())) {
      monitor_->Add(std::move(check));
    }
  }
  void Inject(const std::string& line) { std::ofstream(faults_, std::ios::app) << line << "\n"; }
  void Clear() { std::ofstream(faults_, std::ios::trunc) << ""; }
  // Polls through one whole round (the state check runs every 2 s).
  void Round() {
    clock_.Advance(2000);
    monitor_->Poll();
  }
  const HealthCondition* Find(const std::string& kind, const std::string& device) {
    for (const auto& c : monitor_->conditions()) {
      if (c.kind == kind && c.device == device) return &c;
    }
    return nullptr;
  }

  testing::TempDir dir_;
  std::string faults_;
  std::unique_ptr<testing::ScopedEnv> env_;
  FakeClock clock_;
  testing::CapturedLog log_;
  std::unique_ptr<HealthMonitor> monitor_;
};

TEST_F(GpuChecksTest, AHealthyNodeHasNoConditions) {
  Round();
  Round();
  EXPECT_TRUE(monitor_->conditions().empty());
}

TEST_F(GpuChecksTest, AnXidIsRaisedWithItsCodeAndHeldThenCleared) {
  Round();
  Inject("xid 2 79");
  clock_.Advance(100);
  monitor_->Poll();
  const HealthCondition* xid = Find("xid", "gpu/2");
  ASSERT_NE(xid, nullptr);
  EXPECT_EQ(xid->xid, 79);
  EXPECT_EQ(xid->severity, "fatal");
  Inject("xid 2 13");  // an application XID after a fatal one does not hide it
  clock_.Advance(100);
  monitor_->Poll();
  xid = Find("xid", "gpu/2");
  ASSERT_NE(xid, nullptr);
  EXPECT_EQ(xid->xid, 79);
  EXPECT_EQ(xid->count, 2u);
  clock_.Advance(600);  // past the hold
  monitor_->Poll();
  EXPECT_EQ(Find("xid", "gpu/2"), nullptr);
}

TEST_F(GpuChecksTest, AnApplicationXidIsAWarning) {
  Inject("xid 0 13");
  clock_.Advance(100);
  monitor_->Poll();
  ASSERT_NE(Find("xid", "gpu/0"), nullptr);
  EXPECT_EQ(Find("xid", "gpu/0")->severity, "warning");
}

TEST_F(GpuChecksTest, EccRemapNvlinkThermalAndALostGpuAreStates) {
  Round();
  Inject("ecc 0 2");
  Inject("retired-pending 1");
  Inject("remap-pending 1");
  Inject("remap-failure 2");
  Inject("nvlink-down 0 0");
  Inject("temp 3 95");
  Round();
  EXPECT_NE(Find("ecc-uncorrectable", "gpu/0"), nullptr);
  EXPECT_NE(Find("retired-pages-pending", "gpu/1"), nullptr);
  EXPECT_NE(Find("row-remap-pending", "gpu/1"), nullptr);
  ASSERT_NE(Find("row-remap-failure", "gpu/2"), nullptr);
  EXPECT_EQ(Find("row-remap-failure", "gpu/2")->severity, "fatal");
  EXPECT_NE(Find("nvlink-down", "gpu/0"), nullptr);
  EXPECT_NE(Find("thermal", "gpu/3"), nullptr);
  Clear();
  Inject("lost 3");
  Round();
  ASSERT_NE(Find("gpu-lost", "gpu/3"), nullptr);
  EXPECT_EQ(Find("gpu-lost", "gpu/3")->severity, "fatal");
  EXPECT_EQ(Find("thermal", "gpu/3"), nullptr) << "a lost GPU reports only that";
  EXPECT_EQ(Find("ecc-uncorrectable", "gpu/0"), nullptr) << "cleared with its fault";
  Clear();
  Round();
  EXPECT_TRUE(monitor_->conditions().empty());
}

TEST_F(GpuChecksTest, XidsAreNamedByTheNodesGpuIndexAndEachEventCounts) {
  Build(GPOOL_FAKE_NVML_PATH, {4, 5, 6, 7});  // NVML device i is the node's i-th GPU
  Round();
  Inject("xid 1 79");
  Inject("xid 1 79");
  Inject("xid 3 48");
  clock_.Advance(100);
  monitor_->Poll();
  const HealthCondition* five = Find("xid", "gpu/5");
  ASSERT_NE(five, nullptr);
  EXPECT_EQ(five->count, 2u);
  EXPECT_EQ(five->first_seen_ms, clock_.WallMs());
  ASSERT_NE(Find("xid", "gpu/7"), nullptr);
  EXPECT_EQ(Find("xid", "gpu/7")->xid, 48);
  EXPECT_EQ(Find("xid", "gpu/1"), nullptr);
  clock_.Advance(300);
  Inject("xid 1 79");  // a new event restarts the hold
  monitor_->Poll();
  clock_.Advance(300);
  monitor_->Poll();
  EXPECT_NE(Find("xid", "gpu/5"), nullptr) << "held 500 ms after its last event";
  EXPECT_EQ(Find("xid", "gpu/7"), nullptr) << "600 ms after its only event";
  EXPECT_EQ(Find("xid", "gpu/5")->count, 3u);
}

TEST_F(GpuChecksTest, TheCountFoundAtStartIsTheBaseline) {
  Inject("ecc 1 5");          // errors from before the worker started
  Inject("nvlink-down 3 1");  // a link down at start is not watched
  Build(GPOOL_FAKE_NVML_PATH, {0, 1, 2, 3});
  Round();
  EXPECT_TRUE(monitor_->conditions().empty());
  Clear();
  Inject("ecc 1 6");
  Round();
  ASSERT_NE(Find("ecc-uncorrectable", "gpu/1"), nullptr);
  EXPECT_EQ(Find("ecc-uncorrectable", "gpu/1")->severity, "fatal");
  EXPECT_NE(Find("ecc-uncorrectable", "gpu/1")->message.find("1 volatile"), std::string::npos);
  Inject("nvlink-down 3 1");
  Round();
  EXPECT_EQ(Find("nvlink-down", "gpu/3"), nullptr);
}

TEST_F(GpuChecksTest, ADeviceCountBelowDiscoveryLosesTheGpusPastIt) {
  Round();
  Inject("count 2");
  Round();
  EXPECT_EQ(Find("gpu-lost", "gpu/1"), nullptr);
  EXPECT_NE(Find("gpu-lost", "gpu/2"), nullptr);
  ASSERT_NE(Find("gpu-lost", "gpu/3"), nullptr);
  EXPECT_EQ(Find("gpu-lost", "gpu/3")->severity, "fatal");
}

TEST_F(GpuChecksTest, NvlinkDownNamesTheLinksThatWereActive) {
  Round();
  Inject("nvlink-down 2 0");
  Inject("nvlink-down 2 1");
  Round();
  const HealthCondition* down = Find("nvlink-down", "gpu/2");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->severity, "degraded");
  EXPECT_NE(down->message.find("0,1"), std::string::npos) << down->message;
}

TEST_F(GpuChecksTest, AnOldDriverWithoutEventsOrRowRemapChecksTheRest) {
  Build(GPOOL_FAKE_NVML_OLD_PATH, {0, 1, 2, 3});
  EXPECT_TRUE(log_.Contains("XID events unavailable"));
  Round();
  Inject("xid 0 79");
  Inject("remap-failure 0");
  Inject("ecc 0 1");
  Round();
  ASSERT_EQ(monitor_->conditions().size(), 1u);
  EXPECT_EQ(monitor_->conditions()[0].kind, "ecc-uncorrectable");
}

}  // namespace
}  // namespace gpool::worker
