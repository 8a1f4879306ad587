// Usage records in the state machine (issue 34): one per ended attempt,
// never two, share-weighted, charged up to the last checkpoint when a node is
// lost, and kept across snapshots (also loading snapshots from before them).
#include <gtest/gtest.h>

#include "control/state/cluster_state.h"
#include "control/state/test_specs.h"
#include "protocol/model/prices.h"
#include "protocol/model/task_report.h"
#include "protocol/wire.h"

namespace gpool::state {
namespace {

using testing::MakeNode;

class UsageStateTest : public ::testing::Test {
 protected:
  // Each command at its own time (`at_ms`), so durations are exact.
  ApplyResult At(int64_t at_ms, CommandBody body) { return state_.Apply(++index_, Command{at_ms, std::move(body)}); }

  void SetUp() override {
    NodeSpec node = MakeNode("n1", 4);
    for (auto& gpu : node.gpus) gpu.memory_mib = 40'960;
    ASSERT_TRUE(At(0, RegisterNodeCmd{node, {}}).status.ok());
    ASSERT_TRUE(At(0, RegisterNodeCmd{MakeNode("n2", 4), {}}).status.ok());
  }

  uint64_t Submit(uint32_t gpus, const std::string& user = "alice", RestartSpec restart = {.policy = "never"}) {
    JobSpec spec;
    spec.name = "j";
    spec.user = user;
    spec.restart = restart;
    TaskGroupSpec group;
    group.command = {"true"};
    group.resources = Resources{gpus, 2000, 1024};
    spec.tasks.push_back(group);
    ApplyResult r = At(0, SubmitJobCmd{spec, ""});
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    return r.job_id;
  }

  void Start(int64_t at_ms, uint64_t job, const std::string& node, std::vector<uint32_t> gpus,
             DeviceGrant grant = {}) {
    PlanBind bind{JobId(job), 0, node, std::move(gpus), 2000, 1024};
    bind.grant = grant;
    ASSERT_EQ(At(at_ms, ApplyPlanCmd{{bind}, {}}).binds_applied, 1u);
    ASSERT_TRUE(At(at_ms, TaskEventCmd{EventOf(job, node, "started", at_ms)}).status.ok());
  }

  static TaskEvent EventOf(uint64_t job, const std::string& node, const std::string& kind, int64_t time_ms,
                           uint32_t attempt = 0) {
    TaskEvent event;
    event.node = node;
    event.task = TaskId{JobId(job), 0, attempt};
    event.kind = EnumFromName<TaskEventKind>(kind).value();
    event.pid = 42;
    event.time_ms = time_ms;
    return event;
  }

  const std::deque<UsageRecord>& Records() const { return state_.usage_ledger().records(); }

  ClusterState state_;
  uint64_t index_ = 0;
};

TEST_F(UsageStateTest, AnEndedTaskLeavesOneRecordWithItsShape) {
  const uint64_t job = Submit(2);
  Start(10'000, job, "n2", {0, 1});
  ASSERT_TRUE(At(70'000, TaskEventCmd{EventOf(job, "n2", "exited", 70'000)}).status.ok());
  ASSERT_EQ(Records().size(), 1u);
  const UsageRecord& r = Records().front();
  EXPECT_EQ(r.job, job);
  EXPECT_EQ(r.user, "alice");
  EXPECT_EQ(r.queue, "default");
  EXPECT_EQ(r.queue_path, "root/default");
  EXPECT_EQ(r.pool, "public");
  EXPECT_EQ(r.node, "n2");
  EXPECT_EQ(r.model, "A100");
  EXPECT_EQ(r.gpus, 2u);
  EXPECT_EQ(r.outcome, "succeeded");
  EXPECT_FALSE(r.estimated);
  EXPECT_EQ(r.start_ms, 10'000);
  EXPECT_EQ(r.end_ms, 70'000);
  EXPECT_EQ(r.gpu_mms, 2000u * 60'000);  // two GPU-minutes
  EXPECT_EQ(r.cpu_core_ms, 2u * 60'000);
  EXPECT_EQ(r.memory_mib_s, 1024u * 60);
}

TEST_F(UsageStateTest, ARedeliveredEndEventAddsNoSecondRecord) {
  const uint64_t job = Submit(1);
  Start(1000, job, "n2", {0});
  const TaskEvent exited = EventOf(job, "n2", "exited", 6000);
  ASSERT_TRUE(At(5000, TaskEventCmd{exited}).status.ok());
  // The worker resends until acked; a new leader may apply it again.
  ASSERT_TRUE(At(6000, TaskEventCmd{exited}).status.ok());
  ASSERT_TRUE(At(7000, TaskEventCmd{EventOf(job, "n2", "failed", 7000)}).status.ok());
  ASSERT_TRUE(At(8000, CancelJobCmd{job}).status.code() == StatusCode::kFailedPrecondition);
  ASSERT_EQ(Records().size(), 1u);
  EXPECT_EQ(Records().front().gpu_mms, 1000u * 5000);
  EXPECT_EQ(state_.usage_ledger().records_ever(), 1u);
}

TEST_F(UsageStateTest, AShareCountsItsComputeFraction) {
  JobSpec spec;
  spec.name = "share";
  spec.user = "bob";
  TaskGroupSpec group;
  group.command = {"true"};
  group.resources = Resources{1, 2000, 1024};
  group.resources.gpu_memory_mib = 10'240;
  group.resources.gpu_compute_pct = 30;
  group.resources.sharing_qos = "fixed-share";
  spec.tasks.push_back(group);
  const uint64_t job = At(0, SubmitJobCmd{spec, ""}).job_id;
  Start(1000, job, "n1", {2},
        DeviceGrant{.shared = true, .gpu_memory_mib = 10'240, .gpu_compute_pct = 30, .sharing_qos = "fixed-share"});
  ASSERT_TRUE(At(101'000, TaskEventCmd{EventOf(job, "n1", "exited", 101'000)}).status.ok());
  ASSERT_EQ(Records().size(), 1u);
  const UsageRecord& r = Records().front();
  EXPECT_EQ(r.gpu_milli, 300u);
  EXPECT_EQ(r.gpu_mms, 300u * 100'000);  // 30 GPU-seconds
  EXPECT_EQ(r.share_compute_pct, 30u);
  EXPECT_EQ(r.share_memory_mib, 10'240u);
  EXPECT_EQ(r.share_memory_permille, 250u);
  const auto rows = state_.usage_ledger().Report(0, kHourMs, "user", [](auto&, auto&) { return true; }, {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].share_gpu_mms, 300u * 100'000);
}

TEST_F(UsageStateTest, ANodeLostIsChargedUpToTheLastCheckpoint) {
  const uint64_t job = Submit(1);
  Start(1000, job, "n2", {0});
  ASSERT_TRUE(At(61'000, UsageCheckpointCmd{.keep_records = 100}).status.ok());
  // The node went silent at about 90 s; it is declared lost much later.
  ASSERT_TRUE(At(100'000, NodeStateCmd{"n2", NodeState::kNotReady}).status.ok());
  ASSERT_TRUE(At(200'000, NodeLostCmd{"n2", 90'000}).status.ok());
  ASSERT_EQ(Records().size(), 1u);
  const UsageRecord& r = Records().front();
  EXPECT_EQ(r.outcome, "lost");
  EXPECT_TRUE(r.estimated);
  EXPECT_EQ(r.end_ms, 61'000);
  EXPECT_EQ(r.gpu_mms, 1000u * 60'000);
}

TEST_F(UsageStateTest, ALostTaskThatRestartsLeavesARecordPerAttempt) {
  const uint64_t job = Submit(1, "alice", RestartSpec{.policy = "on-node-loss", .max_attempts = 3});
  Start(1000, job, "n2", {0});
  ASSERT_TRUE(At(31'000, UsageCheckpointCmd{.keep_records = 100}).status.ok());
  ASSERT_TRUE(At(40'000, NodeStateCmd{"n2", NodeState::kNotReady}).status.ok());
  ASSERT_TRUE(At(100'000, NodeLostCmd{"n2", 35'000}).status.ok());
  ASSERT_EQ(state_.FindJob(JobId(job))->tasks[0].id.attempt, 1u);
  PlanBind bind{JobId(job), 0, "n1", {0}, 2000, 1024};
  ASSERT_EQ(At(110'000, ApplyPlanCmd{{bind}, {}}).binds_applied, 1u);
  ASSERT_TRUE(At(110'000, TaskEventCmd{EventOf(job, "n1", "started", 110'000, 1)}).status.ok());
  ASSERT_TRUE(At(120'000, TaskEventCmd{EventOf(job, "n1", "exited", 120'000, 1)}).status.ok());
  // The first attempt's late exit (its worker came back) changes nothing.
  EXPECT_FALSE(At(130'000, TaskEventCmd{EventOf(job, "n2", "exited", 50'000, 0)}).status.ok());
  ASSERT_EQ(Records().size(), 2u);
  EXPECT_EQ(Records()[0].attempt, 0u);
  EXPECT_EQ(Records()[0].outcome, "lost");
  EXPECT_EQ(Records()[0].gpu_mms, 1000u * 30'000);
  EXPECT_EQ(Records()[1].attempt, 1u);
  EXPECT_EQ(Records()[1].outcome, "succeeded");
  EXPECT_EQ(Records()[1].gpu_mms, 1000u * 10'000);
}

TEST_F(UsageStateTest, ALostEventWithItsTimeIsChargedToThatTime) {
  const uint64_t job = Submit(1);
  Start(1000, job, "n2", {0});
  ASSERT_TRUE(At(50'000, TaskEventCmd{EventOf(job, "n2", "lost", 45'000)}).status.ok());
  ASSERT_EQ(Records().size(), 1u);
  EXPECT_EQ(Records().front().outcome, "lost");
  EXPECT_FALSE(Records().front().estimated);
  EXPECT_EQ(Records().front().end_ms, 45'000);
}

TEST_F(UsageStateTest, AStartSeenFirstInARegistrationIsDatedByTheWorkersEvent) {
  const uint64_t job = Submit(1);
  PlanBind bind{JobId(job), 0, "n2", {0}, 2000, 1024};
  ASSERT_EQ(At(1000, ApplyPlanCmd{{bind}, {}}).binds_applied, 1u);
  // A new leader: the worker re-registers with the task running before its
  // "started" event (sent at 2 s) is committed.
  NodeSpec n2 = MakeNode("n2", 4);
  ASSERT_TRUE(At(9000, RegisterNodeCmd{n2, {TaskReport{TaskId{JobId(job), 0, 0}, TaskState::kRunning, 42}}}).status.ok());
  EXPECT_EQ(state_.FindTask(TaskId{JobId(job), 0, 0})->start_ms, 9000);
  ASSERT_TRUE(At(9500, TaskEventCmd{EventOf(job, "n2", "started", 2000)}).status.ok());
  ASSERT_TRUE(At(12'000, TaskEventCmd{EventOf(job, "n2", "exited", 12'000)}).status.ok());
  ASSERT_EQ(Records().size(), 1u);
  EXPECT_EQ(Records().front().start_ms, 2000);
  EXPECT_EQ(Records().front().gpu_mms, 1000u * 10'000);
}

TEST_F(UsageStateTest, AnEndSeenFirstInARegistrationIsDatedByTheWorkerOrTheCheckpoint) {
  const uint64_t timed = Submit(1), untimed = Submit(1);
  Start(1000, timed, "n2", {0});
  Start(1000, untimed, "n2", {1});
  ASSERT_TRUE(At(4000, UsageCheckpointCmd{.keep_records = 100}).status.ok());
  // The worker comes back to a new leader: both ended meanwhile; it still
  // has the first one's exit event (its time), not the second's.
  TaskReport first{TaskId{JobId(timed), 0, 0}, TaskState::kSucceeded, 42};
  first.finish_ms = 5000;
  TaskReport second{TaskId{JobId(untimed), 0, 0}, TaskState::kSucceeded, 43};
  ASSERT_TRUE(At(20'000, RegisterNodeCmd{MakeNode("n2", 4), {first, second}}).status.ok());
  ASSERT_EQ(Records().size(), 2u);
  EXPECT_EQ(Records()[0].end_ms, 5000);
  EXPECT_FALSE(Records()[0].estimated);
  EXPECT_EQ(Records()[1].end_ms, 4000);  // the checkpoint
  EXPECT_TRUE(Records()[1].estimated);
  EXPECT_EQ(Records()[1].outcome, "succeeded");
}

TEST_F(UsageStateTest, RunningTasksAreReportedUpToNow) {
  const uint64_t job = Submit(4);
  Start(1000, job, "n1", {0, 1, 2, 3});
  const auto running = state_.RunningUsage(91'000);
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].outcome, "running");
  const auto rows = state_.usage_ledger().Report(0, kHourMs, "queue", [](auto&, auto&) { return true; }, running);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].running, 1u);
  EXPECT_EQ(rows[0].records, 0u);
  EXPECT_EQ(rows[0].gpu_mms, 4000u * 90'000);
  EXPECT_EQ(rows[0].running_gpu_mms, rows[0].gpu_mms);
}

TEST_F(UsageStateTest, RecordsRollupsAndPricesSurviveASnapshot) {
  const uint64_t job = Submit(1);
  Start(1000, job, "n2", {0});
  ASSERT_TRUE(At(kHourMs + 5000, TaskEventCmd{EventOf(job, "n2", "exited", kHourMs + 5000)}).status.ok());
  PriceTable prices;
  prices.currency = "EUR";
  prices.models = {ModelPrice{"A100", 2'500'000, 0}};
  ASSERT_TRUE(At(kHourMs + 6000, UpdatePricesCmd{prices}).status.ok());
  ASSERT_TRUE(At(kHourMs + 7000, UsageCheckpointCmd{.keep_records = 100}).status.ok());

  ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  ASSERT_EQ(restored.usage_ledger().records().size(), 1u);
  EXPECT_EQ(restored.usage_ledger().records().front().gpu_mms, Records().front().gpu_mms);
  EXPECT_EQ(restored.usage_ledger().checkpoint_ms(), kHourMs + 7000);
  ASSERT_NE(restored.usage_ledger().prices(), nullptr);
  EXPECT_EQ(restored.usage_ledger().prices()->currency, "EUR");
  EXPECT_EQ(restored.usage_ledger().prices()->set_ms, kHourMs + 6000);
  const auto all = [](auto&, auto&) { return true; };
  EXPECT_EQ(restored.usage_ledger().hourly_rows(), state_.usage_ledger().hourly_rows());
  const auto before = state_.usage_ledger().Report(0, 2 * kHourMs, "detail", all, {});
  const auto after = restored.usage_ledger().Report(0, 2 * kHourMs, "detail", all, {});
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].gpu_mms, before[0].gpu_mms);
  EXPECT_EQ(after[0].records, 1u);
  // And the next record continues the sequence.
  const uint64_t next = Submit(1);
  Start(kHourMs * 2, next, "n2", {0});
  ASSERT_TRUE(At(kHourMs * 3, TaskEventCmd{EventOf(next, "n2", "exited", kHourMs * 3)}).status.ok());
  EXPECT_EQ(Records().back().seq, 2u);
}

// A snapshot written before usage accounting has no ledger: it loads empty.
struct SnapshotWithoutUsage {
  uint64_t applied = 7;
  uint64_t next_job_id = 1;
  std::vector<NodeRecord> nodes;
  std::vector<JobRecord> jobs;
  template <typename V>
  void Fields(V& v) {
    v.Required("applied", applied);
    v.Required("next_job_id", next_job_id);
    v.Required("nodes", nodes);
    v.Required("jobs", jobs);
  }
};

TEST(UsageSnapshotTest, AnOldSnapshotWithoutUsageLoads) {
  ClusterState state;
  ASSERT_TRUE(state.Restore(wire::PackToString(SnapshotWithoutUsage{})).ok());
  EXPECT_TRUE(state.usage_ledger().records().empty());
  EXPECT_EQ(state.usage_ledger().prices(), nullptr);
  EXPECT_EQ(state.applied_index(), 7u);
}

TEST(UsageCommandTest, CheckpointAndPricesTravelThroughTheLog) {
  PriceTable prices;
  prices.models = {ModelPrice{"H100", 4'000'000, 3'000'000}};
  prices.class_permille = {{"high", 1500}};
  auto decoded = DecodeCommand(EncodeCommand(Command{9, UpdatePricesCmd{prices}}));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(std::get<UpdatePricesCmd>(decoded->body).table.class_permille.at("high"), 1500u);
  auto checkpoint = DecodeCommand(EncodeCommand(Command{9, UsageCheckpointCmd{5, 6, 7, 8}}));
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
  EXPECT_EQ(std::get<UsageCheckpointCmd>(checkpoint->body).hourly_before_ms, 7);
  EXPECT_EQ(std::get<UsageCheckpointCmd>(checkpoint->body).daily_before_ms, 8);
}

// A checkpoint entry as the log held it before issue 49: no daily_before_ms.
struct CheckpointBeforeIssue49 {
  uint64_t keep_records = 0;
  int64_t records_before_ms = 0;
  int64_t hourly_before_ms = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("keep_records", keep_records);
    v.Optional("records_before_ms", records_before_ms);
    v.Optional("hourly_before_ms", hourly_before_ms);
  }
};
struct CommandBeforeIssue49 {
  std::string cmd = "UsageCheckpoint";
  int64_t t = 0;
  CheckpointBeforeIssue49 body;
  template <typename V>
  void Fields(V& v) {
    v.Required("cmd", cmd);
    v.Required("t", t);
    v.Required("body", body);
  }
};

TEST_F(UsageStateTest, AnOldCheckpointEntryTrimsNoDays) {
  const uint64_t job = Submit(1);
  Start(1000, job, "n2", {0});
  ASSERT_TRUE(At(2 * kHourMs, TaskEventCmd{EventOf(job, "n2", "exited", 2 * kHourMs)}).status.ok());
  auto old = DecodeCommand(
      wire::PackToString(CommandBeforeIssue49{.t = 40 * kDayMs, .body = {100, 0, 39 * kDayMs}}));
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(std::get<UsageCheckpointCmd>(old->body).daily_before_ms, 0);
  ASSERT_TRUE(state_.Apply(++index_, *old).status.ok());
  EXPECT_EQ(state_.usage_ledger().hourly_rows(), 0u);
  EXPECT_EQ(state_.usage_ledger().daily_rows(), 1u);
  EXPECT_EQ(state_.usage_ledger().daily_from_ms(), 0);
  // A new one drops the day.
  ASSERT_TRUE(At(41 * kDayMs, UsageCheckpointCmd{.keep_records = 100, .daily_before_ms = 40 * kDayMs}).status.ok());
  EXPECT_EQ(state_.usage_ledger().daily_rows(), 0u);
  EXPECT_EQ(state_.usage_ledger().daily_from_ms(), 40 * kDayMs);
}

}  // namespace
}  // namespace gpool::state
