// HealthMonitor over scripted checks, and the GPU checks over the fake NVML
// with faults injected through FAKE_NVML_HEALTH_FILE.
#include "worker/health/health_monitor.h"

#include <fstream>

#include <gtest/gtest.h>

#include "worker/health/gpu_checks.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

// A check that reports what the test puts in `findings`.
class ScriptedCheck final : public HealthCheck {
 public:
  ScriptedCheck(std::string name, int64_t interval, std::vector<HealthKind> kinds, std::vector<HealthFinding>* findings)
      : name_(std::move(name)), interval_(interval), kinds_(std::move(kinds)), findings_(findings) {}
  std::string_view name() const override { return name_; }
  int64_t interval_ms() const override { return interval_; }
  std::vector<HealthKind> kinds() const override { return kinds_; }
  std::vector<HealthFinding> Run(int64_t) override {
    ++runs;
    return *findings_;
  }
  int runs = 0;

 private:
  std::string name_;
  int64_t interval_;
  std::vector<HealthKind> kinds_;
  std::vector<HealthFinding>* findings_;
};

class HealthMonitorTest : public ::testing::Test {
 protected:
  HealthMonitorTest() : monitor_(&clock_, log_.logger()) {
    auto disk = std::make_unique<ScriptedCheck>("disk", 1000, std::vector<HealthKind>{HealthKind::kDiskLow}, &disk_);
    auto xid = std::make_unique<ScriptedCheck>("xid", 100, std::vector<HealthKind>{HealthKind::kXid}, &xid_);
    disk_check_ = disk.get();
    monitor_.Add(std::move(disk));
    monitor_.Add(std::move(xid));
  }
  FakeClock clock_;
  testing::CapturedLog log_;
  std::vector<HealthFinding> disk_, xid_;
  ScriptedCheck* disk_check_ = nullptr;
  HealthMonitor monitor_;
};

TEST_F(HealthMonitorTest, RaisesRefreshesAndClearsAndMovesTheVersionOnlyOnNews) {
  EXPECT_FALSE(monitor_.Poll());
  const uint64_t v0 = monitor_.version();
  EXPECT_EQ(monitor_.rounds(), 1u);
  disk_ = {HealthFinding{HealthKind::kDiskLow, "disk", HealthSeverity::kDegraded, "12 MiB free"}};
  clock_.Advance(1000);
  EXPECT_TRUE(monitor_.Poll());
  ASSERT_EQ(monitor_.conditions().size(), 1u);
  const HealthCondition raised = monitor_.conditions()[0];
  EXPECT_EQ(raised.kind, "disk-low");
  EXPECT_EQ(raised.severity, "degraded");
  EXPECT_EQ(raised.first_seen_ms, clock_.WallMs());
  EXPECT_GT(monitor_.version(), v0);
  const uint64_t v1 = monitor_.version();

  clock_.Advance(1000);  // found again: last seen moves, nothing else
  EXPECT_FALSE(monitor_.Poll());
  EXPECT_EQ(monitor_.version(), v1);
  EXPECT_EQ(monitor_.conditions()[0].first_seen_ms, raised.first_seen_ms);
  EXPECT_EQ(monitor_.conditions()[0].last_seen_ms, clock_.WallMs());

  xid_ = {HealthFinding{HealthKind::kXid, "gpu/1", HealthSeverity::kFatal, "Xid 79", 79, 1}};
  clock_.Advance(100);
  EXPECT_TRUE(monitor_.Poll());
  xid_[0].new_events = 2;  // two more events: news
  clock_.Advance(100);
  EXPECT_TRUE(monitor_.Poll());
  EXPECT_EQ(monitor_.conditions()[1].count, 3u);
  xid_[0].new_events = 0;  // held, no new event: not news
  clock_.Advance(100);
  EXPECT_FALSE(monitor_.Poll());

  disk_.clear();  // the disk check no longer finds it: cleared; the XID stays
  clock_.Advance(1000);
  EXPECT_TRUE(monitor_.Poll());
  ASSERT_EQ(monitor_.conditions().size(), 1u);
  EXPECT_EQ(monitor_.conditions()[0].kind, "xid");
  EXPECT_TRUE(log_.Contains("health condition cleared"));
}

TEST_F(HealthMonitorTest, ARoundEndsWhenEveryCheckHasRun) {
  monitor_.Poll();
  EXPECT_EQ(monitor_.rounds(), 1u);
  for (int i = 0; i < 9; ++i) {
    clock_.Advance(100);
    monitor_.Poll();  // only the XID check is due
  }
  EXPECT_EQ(monitor_.rounds(), 1u);
  clock_.Advance(100);
  monitor_.Poll();  // the disk check too
  EXPECT_EQ(monitor_.rounds(), 2u);
  EXPECT_EQ(disk_check_->runs, 2);
}

class GpuChecksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    faults_ = dir_.path() + "/faults";
    std::ofstream(faults_) << "";
    env_ = std::make_unique<testing::ScopedEnv>("FAKE_NVML_HEALTH_FILE", faults_);
    auto nvml = NvmlLibrary::Open(GPOOL_FAKE_NVML_PATH);
    ASSERT_TRUE(nvml.ok()) << nvml.status().ToString();
    GpuCheckOptions options;
    options.gpu_indices = {0, 1, 2, 3};
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

}  // namespace
}  // namespace gpool::worker
