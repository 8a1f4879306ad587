#include "control/alert_driver.h"

#include <gtest/gtest.h>

#include "control/testing/fake_ports.h"
#include "protocol/base/testing/fake_clock.h"
#include "protocol/event.h"
#include "protocol/messages_worker.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/task_report.h"

namespace gpool::control {
namespace {

// One node of 4 GPUs; job 1 runs on GPU 0 (submitted at wall time
// 1,000,000, the ImmediateProposer's), job 2 wants 8 GPUs and waits.
class AlertDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NodeSpec node;
    node.name = "n1";
    node.cpu_milli = 16'000;
    node.memory_mib = 65'536;
    for (uint32_t i = 0; i < 4; ++i) node.gpus.push_back(GpuInfo{.index = i, .uuid = "GPU-" + std::to_string(i)});
    Do(state::RegisterNodeCmd{node, {}, {}, ""});
    running_ = Submit("train", 1);
    state::ApplyPlanCmd plan;
    plan.binds.push_back(state::PlanBind{JobId(running_), 0, "n1", {0}, 100, 64});
    Do(plan);
    TaskEvent started;
    started.node = "n1";
    started.task = TaskId{JobId(running_), 0, 0};
    started.kind = TaskEventKind::kStarted;
    started.pid = 42;
    Do(state::TaskEventCmd{started});
    waiting_ = Submit("big", 8);
    workers_.Connect("n1", "peer-1", 0, clock_.WallMs());
    proposer_.clear();
  }
  void Do(state::CommandBody body) {
    proposer_.Propose(std::move(body), [](const state::ApplyResult& r) { ASSERT_TRUE(r.status.ok()) << r.status.ToString(); });
  }
  uint64_t Submit(const std::string& name, uint32_t gpus) {
    JobSpec spec;
    spec.name = name;
    spec.tasks.push_back(TaskGroupSpec{.command = {"true"}, .resources = Resources{gpus, 100, 64}});
    uint64_t id = 0;
    proposer_.Propose(state::SubmitJobCmd{spec, ""}, [&](const state::ApplyResult& r) { id = r.job_id; });
    return id;
  }
  std::vector<ClusterEvent> Alerts() const {
    std::vector<ClusterEvent> alerts;
    for (const auto& event : state_.events()) {
      if (event.kind.rfind("alert-", 0) == 0) alerts.push_back(event);
    }
    return alerts;
  }
  static AlertRules Off() {
    AlertRules rules;
    rules.check_every_ms = 1000;
    rules.queue_wait_ms = 0;
    rules.quota_used_pct = 0;
    rules.low_util_pct = 0;
    return rules;
  }

  state::ClusterState state_;
  ImmediateProposer proposer_{state_};
  FakeClock clock_{1'000'000};
  WorkerTable workers_;
  uint64_t running_ = 0;
  uint64_t waiting_ = 0;
};

TEST_F(AlertDriverTest, ALongWaitFiresOnceWithItsReasonAndResolvesWhenTheJobEnds) {
  AlertRules rules = Off();
  rules.queue_wait_ms = 60'000;
  AlertDriver driver(rules, state_, workers_, proposer_, &clock_);
  clock_.Advance(59'000);
  driver.Tick(clock_.MonoMs());
  EXPECT_TRUE(Alerts().empty()) << "waited 59 s of 60";
  clock_.Advance(2'000);
  driver.Tick(clock_.MonoMs());
  auto alerts = Alerts();
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].kind, "alert-firing");
  EXPECT_EQ(alerts[0].reason, "queue-wait");
  EXPECT_EQ(alerts[0].job, waiting_);
  EXPECT_EQ(alerts[0].dedupe_key, "queue-wait/job-" + std::to_string(waiting_));
  // Re-evaluated, and by a new leader: still one notice.
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(1'000);
    driver.Tick(clock_.MonoMs());
  }
  driver.Reset();
  driver.Tick(clock_.MonoMs());
  EXPECT_EQ(Alerts().size(), 1u);
  EXPECT_EQ(state_.alerts().size(), 1u);

  Do(state::CancelJobCmd{waiting_, 0});
  clock_.Advance(1'000);
  driver.Tick(clock_.MonoMs());
  alerts = Alerts();
  ASSERT_EQ(alerts.size(), 2u);
  EXPECT_EQ(alerts[1].kind, "alert-resolved");
  EXPECT_EQ(alerts[1].dedupe_key, alerts[0].dedupe_key);
  EXPECT_TRUE(state_.alerts().empty());
}

TEST_F(AlertDriverTest, AQueueNearItsCapabilityFires) {
  UpdateQueue update;
  update.op = QueueOp::kUpdate;
  update.spec.name = "default";
  update.spec.capability = {{"gpu", 1}};
  Do(state::UpdateQueueCmd{update});
  ASSERT_EQ(state_.FindQueue("default")->spec.capability.at("gpu"), 1u);
  AlertRules rules = Off();
  rules.quota_used_pct = 90;
  AlertDriver driver(rules, state_, workers_, proposer_, &clock_);
  driver.Tick(clock_.MonoMs());
  auto alerts = Alerts();
  ASSERT_EQ(alerts.size(), 1u) << "1 of 1 GPU held";
  EXPECT_EQ(alerts[0].reason, "quota");
  EXPECT_EQ(alerts[0].severity, "degraded");  // the health vocabulary, so sinks' min_severity applies
  EXPECT_EQ(alerts[0].dedupe_key, "quota/default/gpu");
}

TEST_F(AlertDriverTest, IdleGpusFireAfterTheirWindowAndUnmeasuredOnesNever) {
  AlertRules rules = Off();
  rules.low_util_pct = 10;
  rules.low_util_ms = 60'000;
  AlertDriver driver(rules, state_, workers_, proposer_, &clock_);
  // No sample for GPU 0 (a simulated node): never idle.
  for (int i = 0; i < 3; ++i) {
    driver.Tick(clock_.MonoMs());
    clock_.Advance(60'000);
  }
  EXPECT_TRUE(Alerts().empty());

  workers_.RecordGpus("n1", {GpuUtilization{0, 3, 100}});
  driver.Tick(clock_.MonoMs());  // idle from now
  clock_.Advance(59'000);
  driver.Tick(clock_.MonoMs());
  EXPECT_TRUE(Alerts().empty()) << "idle 59 s of 60";
  clock_.Advance(1'000);
  driver.Tick(clock_.MonoMs());
  auto alerts = Alerts();
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].reason, "low-utilisation");
  EXPECT_EQ(alerts[0].node, "n1");
  EXPECT_EQ(alerts[0].job, running_);

  workers_.RecordGpus("n1", {GpuUtilization{0, 80, 100}});
  clock_.Advance(1'000);
  driver.Tick(clock_.MonoMs());
  alerts = Alerts();
  ASSERT_EQ(alerts.size(), 2u);
  EXPECT_EQ(alerts[1].kind, "alert-resolved");
}

TEST_F(AlertDriverTest, AlertsSurviveASnapshot) {
  AlertRules rules = Off();
  rules.queue_wait_ms = 1;
  AlertDriver driver(rules, state_, workers_, proposer_, &clock_);
  clock_.Advance(10);
  driver.Tick(clock_.MonoMs());
  ASSERT_EQ(state_.alerts().size(), 1u);
  state::ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  ASSERT_EQ(restored.alerts().size(), 1u);
  EXPECT_EQ(restored.alerts().begin()->second.rule, "queue-wait");
}

}  // namespace
}  // namespace gpool::control
