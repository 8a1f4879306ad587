// HealthMonitor over scripted checks (testing::ScriptedCheck): raise, refresh,
// clear, the version and the rounds, with a FakeClock.
#include "worker/health/health_monitor.h"

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/health.h"
#include "worker/health/testing/scripted_check.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

using testing::ScriptedCheck;

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
  EXPECT_EQ(disk_check_->runs(), 2);
}

TEST_F(HealthMonitorTest, ASeverityOrMessageChangeIsNewsAndOnlyTheOwningCheckClears) {
  disk_ = {HealthFinding{HealthKind::kDiskLow, "disk", HealthSeverity::kDegraded, "12 MiB free"}};
  EXPECT_TRUE(monitor_.Poll());
  const uint64_t raised = monitor_.version();
  for (int i = 0; i < 9; ++i) {
    clock_.Advance(100);
    EXPECT_FALSE(monitor_.Poll()) << "the XID check runs and finds nothing: not its condition to clear";
  }
  ASSERT_EQ(monitor_.conditions().size(), 1u);
  EXPECT_EQ(monitor_.version(), raised);

  disk_[0].severity = HealthSeverity::kFatal;
  clock_.Advance(100);
  EXPECT_TRUE(monitor_.Poll());
  EXPECT_EQ(monitor_.conditions()[0].severity, "fatal");
  const uint64_t worse = monitor_.version();
  EXPECT_GT(worse, raised);

  disk_[0].message = "3 MiB free";
  clock_.Advance(1000);
  EXPECT_TRUE(monitor_.Poll());
  EXPECT_GT(monitor_.version(), worse);
  EXPECT_EQ(monitor_.conditions()[0].message, "3 MiB free");
  EXPECT_EQ(monitor_.conditions()[0].count, 1u) << "a lasting state is counted once";
}

TEST_F(HealthMonitorTest, NoChecksNoRounds) {
  HealthMonitor empty(&clock_, log_.logger());
  EXPECT_FALSE(empty.Poll());
  EXPECT_EQ(empty.rounds(), 0u);
  EXPECT_TRUE(empty.conditions().empty());
}

}  // namespace
}  // namespace gpool::worker
