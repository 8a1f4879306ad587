// What the state machine does when nodes are lost or unhealthy: restart
// policies, gangs requeued whole, cancels on unreachable nodes, health
// conditions and fences, and the event stream they leave.
#include <algorithm>

#include <gtest/gtest.h>

#include "control/state/cluster_state.h"
#include "control/state/test_specs.h"
#include "protocol/event.h"
#include "protocol/health.h"
#include "protocol/model/health_fence.h"
#include "protocol/model/node_update.h"
#include "protocol/model/probe.h"
#include "protocol/model/task_report.h"

namespace gpool::state {
namespace {

using testing::MakeNode;

class NodeLossStateTest : public ::testing::Test {
 protected:
  ApplyResult Do(CommandBody body) {
    return state_.Apply(++index_, Command{static_cast<int64_t>(1000 * index_), std::move(body)});
  }
  // The committed health-raised and health-cleared events, in order.
  std::vector<ClusterEvent> HealthEvents() const {
    std::vector<ClusterEvent> health;
    for (const auto& e : state_.events()) {
      if (e.kind.rfind("health-", 0) == 0) health.push_back(e);
    }
    return health;
  }

  uint64_t Submit(uint32_t replicas, uint32_t gpus, RestartSpec restart = {}, uint32_t min_replicas = 0,
                  uint64_t max_runtime_ms = 0) {
    JobSpec spec;
    spec.name = "train";
    TaskGroupSpec group;
    group.replicas = replicas;
    group.min_replicas = min_replicas;
    group.command = {"true"};
    group.resources = Resources{gpus, 1000, 1024};
    spec.tasks.push_back(group);
    spec.restart = restart;
    spec.max_runtime_ms = max_runtime_ms;
    ApplyResult r = Do(SubmitJobCmd{spec, ""});
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    return r.job_id;
  }

  void Place(uint64_t job, uint32_t task, const std::string& node, std::vector<uint32_t> gpus, uint32_t attempt = 0) {
    ApplyResult r = Do(ApplyPlanCmd{{PlanBind{JobId(job), task, node, std::move(gpus), 1000, 1024}}, {}});
    ASSERT_EQ(r.binds_applied, 1u);
    Event(job, task, node, "started", 0, attempt);
  }

  // A gang is placed in one plan: task i on nodes[i], all eight GPUs.
  void PlaceGang(uint64_t job, const std::vector<std::string>& nodes) {
    ApplyPlanCmd plan;
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      plan.binds.push_back(PlanBind{JobId(job), i, nodes[i], {0, 1, 2, 3, 4, 5, 6, 7}, 1000, 1024});
    }
    ASSERT_EQ(Do(plan).binds_applied, nodes.size());
    for (uint32_t i = 0; i < nodes.size(); ++i) Event(job, i, nodes[i], "started");
  }

  ApplyResult Event(uint64_t job, uint32_t task, const std::string& node, const std::string& kind, int32_t code = 0,
                    uint32_t attempt = 0) {
    TaskEvent event;
    event.node = node;
    event.task = TaskId{JobId(job), task, attempt};
    event.kind = EnumFromName<TaskEventKind>(kind).value();
    event.exit_code = code;
    event.pid = 100 + task;
    return Do(TaskEventCmd{event});
  }

  void GoNotReady(const std::string& node) { ASSERT_TRUE(Do(NodeStateCmd{node, NodeState::kNotReady}).status.ok()); }

  const JobRecord& Job(uint64_t id) { return *state_.FindJob(JobId(id)); }

  std::vector<std::string> EventKinds() {
    std::vector<std::string> kinds;
    for (const auto& e : state_.events()) kinds.push_back(e.kind);
    return kinds;
  }

  // No GPU is held by two tasks and every holder holds resources on that node.
  void ExpectNoDeviceHeldTwice() {
    for (const auto& [name, node] : state_.nodes()) {
      for (const auto& [gpu, owner] : node.gpu_owner) {
        const TaskRecord* task = state_.FindTask(owner);
        ASSERT_NE(task, nullptr) << name << " gpu " << gpu;
        EXPECT_EQ(task->node, name);
        EXPECT_TRUE(HoldsResources(task->state));
      }
    }
  }

  ClusterState state_;
  uint64_t index_ = 0;
};

TEST_F(NodeLossStateTest, ALostNodesTaskIsRequeuedAsItsNextAttemptAndItsGpusAreFreed) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  const uint64_t job = Submit(1, 2);
  Place(job, 0, "n1", {0, 1});
  GoNotReady("n1");
  EXPECT_EQ(Job(job).state, JobState::kRunning);  // NotReady: still counted as running
  ASSERT_TRUE(Do(NodeLostCmd{"n1", 123}).status.ok());

  const TaskRecord& task = Job(job).tasks[0];
  EXPECT_EQ(task.state, TaskState::kPending);
  EXPECT_EQ(task.id.attempt, 1u);
  EXPECT_NE(task.message().find("node n1 was lost"), std::string::npos) << task.message();
  EXPECT_EQ(Job(job).state, JobState::kPending);
  EXPECT_EQ(Job(job).restarts(), 1u);
  EXPECT_TRUE(state_.pending_jobs().count(job));
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kLost);
  EXPECT_TRUE(state_.FindNode("n1")->gpu_owner.empty());
  EXPECT_EQ(state_.active_task_count(), 0u);
  const auto kinds = EventKinds();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "node-lost"), kinds.end());
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "task-lost"), kinds.end());
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "task-requeued"), kinds.end());
  // A repeat changes nothing.
  EXPECT_TRUE(Do(NodeLostCmd{"n1", 123}).status.ok());
  EXPECT_EQ(Job(job).restarts(), 1u);
}

TEST_F(NodeLossStateTest, ANodeThatCameBackIsNotLost) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  const uint64_t job = Submit(1, 1);
  Place(job, 0, "n1", {0});
  GoNotReady("n1");
  Do(NodeStateCmd{"n1", NodeState::kReady});
  EXPECT_EQ(Do(NodeLostCmd{"n1", 0}).status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Job(job).tasks[0].state, TaskState::kRunning);
}

TEST_F(NodeLossStateTest, PolicyNeverFailsTheJobWithTheTaskLost) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  const uint64_t job = Submit(1, 1, RestartSpec{"never", 3});
  Place(job, 0, "n1", {0});
  GoNotReady("n1");
  Do(NodeLostCmd{"n1", 0});
  EXPECT_EQ(Job(job).tasks[0].state, TaskState::kLost);
  EXPECT_EQ(Job(job).state, JobState::kFailed);
  EXPECT_NE(Job(job).failure().find("was lost"), std::string::npos);
}

TEST_F(NodeLossStateTest, RequeuesStopAtMaxAttempts) {
  for (const char* n : {"n1", "n2", "n3"}) Do(RegisterNodeCmd{MakeNode(n, 8), {}});
  const uint64_t job = Submit(1, 1, RestartSpec{"on-node-loss", 2});
  uint32_t attempt = 0;
  for (const char* n : {"n1", "n2", "n3"}) {
    Place(job, 0, n, {0}, attempt);
    GoNotReady(n);
    Do(NodeLostCmd{n, 0});
    ++attempt;
  }
  EXPECT_EQ(Job(job).restarts(), 2u);
  EXPECT_EQ(Job(job).tasks[0].state, TaskState::kLost);
  EXPECT_EQ(Job(job).state, JobState::kFailed);
}

TEST_F(NodeLossStateTest, AGangIsRequeuedWholeAndCountsOneRestart) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  Do(RegisterNodeCmd{MakeNode("n2", 8), {}});
  const uint64_t job = Submit(2, 8);
  PlaceGang(job, {"n1", "n2"});
  GoNotReady("n1");
  Do(NodeLostCmd{"n1", 0});
  EXPECT_EQ(Job(job).tasks[0].state, TaskState::kPending);
  // Its partner on the healthy node is stopped, to come back with it.
  const TaskRecord& partner = Job(job).tasks[1];
  EXPECT_TRUE(partner.stop_requested);
  EXPECT_TRUE(partner.evicted);
  ASSERT_TRUE(Event(job, 1, "n2", "exited", 143).status.ok());
  EXPECT_EQ(Job(job).tasks[1].state, TaskState::kPending);
  EXPECT_EQ(Job(job).tasks[1].id.attempt, 1u);
  EXPECT_EQ(Job(job).state, JobState::kPending);
  EXPECT_EQ(Job(job).restarts(), 1u);
  ExpectNoDeviceHeldTwice();
}

TEST_F(NodeLossStateTest, AnElasticJobAboveItsMinimumKeepsRunning) {
  for (const char* n : {"n1", "n2", "n3"}) Do(RegisterNodeCmd{MakeNode(n, 8), {}});
  const uint64_t job = Submit(3, 8, RestartSpec{}, /*min_replicas=*/2);
  PlaceGang(job, {"n1", "n2", "n3"});
  GoNotReady("n3");
  Do(NodeLostCmd{"n3", 0});
  EXPECT_EQ(Job(job).tasks[2].state, TaskState::kPending);
  EXPECT_FALSE(Job(job).tasks[0].stop_requested);
  EXPECT_FALSE(Job(job).tasks[1].stop_requested);
  EXPECT_EQ(Job(job).state, JobState::kRunning);
  EXPECT_TRUE(state_.pending_jobs().count(job));  // the lost replica may be placed again
}

TEST_F(NodeLossStateTest, CancellingAJobOnAnUnreachableNodeCompletesAtOnce) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  const uint64_t job = Submit(1, 1);
  Place(job, 0, "n1", {0});
  GoNotReady("n1");
  ApplyResult r = Do(CancelJobCmd{job, 0});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.job_state, "Cancelled");
  EXPECT_EQ(Job(job).tasks[0].state, TaskState::kLost);
  EXPECT_TRUE(Job(job).failure().empty());
  EXPECT_TRUE(state_.FindNode("n1")->gpu_owner.empty());
}

TEST_F(NodeLossStateTest, OnFailureRequeuesAFailedTaskButOnNodeLossDoesNot) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  const uint64_t retried = Submit(1, 1, RestartSpec{"on-failure", 1});
  const uint64_t plain = Submit(1, 1);
  Place(retried, 0, "n1", {0});
  Place(plain, 0, "n1", {1});
  Event(retried, 0, "n1", "exited", 2);
  Event(plain, 0, "n1", "exited", 2);
  EXPECT_EQ(Job(retried).state, JobState::kPending);
  EXPECT_EQ(Job(retried).tasks[0].id.attempt, 1u);
  EXPECT_NE(Job(retried).restart_reason().find("exit code 2"), std::string::npos);
  EXPECT_EQ(Job(plain).state, JobState::kFailed);
  // Its one restart used, the next failure fails it.
  Place(retried, 0, "n1", {0}, 1);
  Event(retried, 0, "n1", "exited", 2, 1);
  EXPECT_EQ(Job(retried).state, JobState::kFailed);
}

TEST_F(NodeLossStateTest, ATaskStoppedAtItsTimeLimitFailsAndIsNotRestarted) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  const uint64_t job = Submit(1, 1, RestartSpec{"on-failure", 3}, 0, 3'600'000);
  Place(job, 0, "n1", {0});
  // The scheduler sees how long it has left: an hour from its start.
  const int64_t started = Job(job).tasks[0].start_ms;
  ASSERT_GT(started, 0);
  const topology::ClusterView view = state_.BuildView(started + 600'000);
  ASSERT_EQ(view.running.size(), 1u);
  EXPECT_EQ(view.running[0].remaining_ms, 3'000'000);
  TaskEvent event;
  event.node = "n1";
  event.task = TaskId{JobId(job), 0, 0};
  event.kind = TaskEventKind::kExited;
  event.signal = 15;
  event.exit_code = 143;
  event.message = std::string("stopped by the worker: ") + kTimeLimitReason;
  ASSERT_TRUE(Do(TaskEventCmd{event}).status.ok());
  EXPECT_EQ(Job(job).state, JobState::kFailed);
  EXPECT_EQ(Job(job).restarts(), 0u) << "it would only reach its limit again";
  EXPECT_NE(Job(job).tasks[0].message().find("time limit"), std::string::npos) << Job(job).tasks[0].message();
}

TEST_F(NodeLossStateTest, ATaskKilledOverItsGpuShareFailsIsNotRestartedAndIsAnEvent) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  const uint64_t job = Submit(1, 1, RestartSpec{"on-failure", 3});
  Place(job, 0, "n1", {0});
  TaskEvent event;
  event.node = "n1";
  event.task = TaskId{JobId(job), 0, 0};
  event.kind = TaskEventKind::kExited;
  event.signal = 9;
  event.exit_code = 137;
  event.message = "stopped by the worker: GPU memory 20480 MiB over its share of 10240 MiB (the interposer was "
                  "bypassed)";
  ASSERT_TRUE(Do(TaskEventCmd{event}).status.ok());
  EXPECT_EQ(Job(job).state, JobState::kFailed);
  EXPECT_EQ(Job(job).restarts(), 0u) << "it would overrun again";
  EXPECT_NE(Job(job).tasks[0].message().find("over its share of 10240 MiB"), std::string::npos)
      << Job(job).tasks[0].message();
  std::vector<ClusterEvent> over;
  for (const auto& e : state_.events()) {
    if (e.kind == "task-over-share") over.push_back(e);
  }
  ASSERT_EQ(over.size(), 1u);
  EXPECT_EQ(over[0].node, "n1");
  EXPECT_EQ(over[0].job, job);
  EXPECT_NE(over[0].message.find("GPU memory 20480 MiB"), std::string::npos) << over[0].message;

  // An ordinary failure of the same kind of job is still restarted.
  const uint64_t other = Submit(1, 1, RestartSpec{"on-failure", 3});
  Place(other, 0, "n1", {1});
  event.task = TaskId{JobId(other), 0, 0};
  event.message = "";
  ASSERT_TRUE(Do(TaskEventCmd{event}).status.ok());
  EXPECT_EQ(Job(other).restarts(), 1u);
}

TEST_F(NodeLossStateTest, ATaskAReRegisteredWorkerDoesNotKnowIsRequeued) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  const uint64_t job = Submit(1, 1);
  Place(job, 0, "n1", {0});
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});  // a rebooted node: no tasks
  EXPECT_EQ(Job(job).tasks[0].state, TaskState::kPending);
  EXPECT_EQ(Job(job).tasks[0].id.attempt, 1u);
  EXPECT_EQ(Job(job).restarts(), 1u);
}

TEST_F(NodeLossStateTest, HealthRaisedAndClearedShareADedupeKey) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  HealthCondition xid{.kind = "xid", .device = "gpu/3", .severity = "fatal", .first_seen_ms = 77,
                      .last_seen_ms = 77, .count = 1, .message = "Xid 79", .xid = 79};
  ASSERT_TRUE(Do(NodeHealthCmd{"n1", {xid}}).status.ok());
  ASSERT_TRUE(Do(NodeHealthCmd{"n1", {xid}}).status.ok());  // no news
  ASSERT_TRUE(Do(NodeHealthCmd{"n1", {}}).status.ok());
  const std::vector<ClusterEvent> health = HealthEvents();
  ASSERT_EQ(health.size(), 2u);
  EXPECT_EQ(health[0].kind, "health-raised");
  EXPECT_EQ(health[0].severity, "fatal");
  EXPECT_EQ(health[1].kind, "health-cleared");
  EXPECT_EQ(health[0].dedupe_key, health[1].dedupe_key);
  EXPECT_TRUE(state_.FindNode("n1")->health.empty());
}

// A condition raised while its node was between leaders first reaches the
// state with the node's registration at the next one, not with a heartbeat:
// it is raised (and later cleared) all the same, or a webhook never hears of it.
TEST_F(NodeLossStateTest, HealthThatArrivesWithARegistrationIsRaisedAndCleared) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  HealthCondition xid{.kind = "xid", .device = "gpu/2", .severity = "fatal", .first_seen_ms = 5,
                      .last_seen_ms = 5, .count = 1, .message = "Xid 48", .xid = 48};
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 8), {}, {xid}}).status.ok());
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 8), {}, {xid}}).status.ok());  // the same: no news
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 8), {}, {}}).status.ok());
  const std::vector<ClusterEvent> health = HealthEvents();
  ASSERT_EQ(health.size(), 2u);
  EXPECT_EQ(health[0].kind, "health-raised");
  EXPECT_EQ(health[0].node, "n1");
  EXPECT_EQ(health[1].kind, "health-cleared");
  EXPECT_EQ(health[0].dedupe_key, health[1].dedupe_key);
}

TEST_F(NodeLossStateTest, HealthFencesCordonUncordonAndNeverLiftAnOperatorsCordon) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  Do(RegisterNodeCmd{MakeNode("n2", 8), {}});
  Do(HealthFenceCmd{"n1", HealthFenceAction::kGpuUnhealthy, 3, 0, "xid 79"});
  Do(HealthFenceCmd{"n1", HealthFenceAction::kCordon, 0, 0, "xid 79"});
  const NodeRecord& n1 = *state_.FindNode("n1");
  EXPECT_TRUE(n1.cordoned);
  EXPECT_EQ(n1.cordon_reason, "health");
  EXPECT_FALSE(n1.GpuUsable(n1.spec.gpus[3]));
  EXPECT_TRUE(n1.GpuUsable(n1.spec.gpus[2]));
  // The scheduler's view agrees.
  const topology::ClusterView view = state_.BuildView();
  for (const auto& node : view.nodes) {
    if (node.name == "n1") {
      EXPECT_FALSE(node.ready && !node.cordoned);
      EXPECT_EQ(node.UsableGpus(), 7u);
    }
  }
  Do(HealthFenceCmd{"n1", HealthFenceAction::kUncordon, 0, 0, "clear for 3 rounds"});
  Do(HealthFenceCmd{"n1", HealthFenceAction::kGpuHealthy, 3, 0, ""});
  EXPECT_FALSE(n1.cordoned);
  EXPECT_TRUE(n1.GpuUsable(n1.spec.gpus[3]));

  UpdateNode cordon;
  cordon.node = "n2";
  cordon.op = NodeUpdateOp::kCordon;
  Do(UpdateNodeCmd{cordon});
  Do(HealthFenceCmd{"n2", HealthFenceAction::kUncordon, 0, 0, "clear"});
  EXPECT_TRUE(state_.FindNode("n2")->cordoned);
  EXPECT_EQ(state_.FindNode("n2")->cordon_reason, "operator");
}

TEST_F(NodeLossStateTest, ADrainStopsTasksAndRequeuesThemWithoutCountingARestart) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  const uint64_t job = Submit(1, 1);
  Place(job, 0, "n1", {0});
  Do(HealthFenceCmd{"n1", HealthFenceAction::kDrain, 0, 5000, "xid 79"});
  EXPECT_TRUE(Job(job).tasks[0].stop_requested);
  EXPECT_EQ(Job(job).tasks[0].stop_grace_ms, 5000u);
  Event(job, 0, "n1", "exited", 143);
  EXPECT_EQ(Job(job).tasks[0].state, TaskState::kPending);
  EXPECT_EQ(Job(job).restarts(), 0u);
}

TEST_F(NodeLossStateTest, TheEventStreamIsBoundedAndSurvivesASnapshot) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  for (size_t i = 0; i < ClusterState::kMaxEvents + 10; ++i) {
    UpdateNode op;
    op.node = "n1";
    op.op = i % 2 == 0 ? NodeUpdateOp::kCordon : NodeUpdateOp::kUncordon;
    Do(UpdateNodeCmd{op});
  }
  EXPECT_EQ(state_.events().size(), ClusterState::kMaxEvents);
  EXPECT_EQ(state_.events().front().seq, 11u);
  EXPECT_EQ(state_.last_event_seq(), ClusterState::kMaxEvents + 10);
  EXPECT_EQ(state_.EventsAfter(state_.last_event_seq() - 3, 100).size(), 3u);
  Do(SinkCursorCmd{"ops", 42});
  Do(SinkCursorCmd{"ops", 7});  // never moves back

  ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  EXPECT_EQ(restored.events().size(), state_.events().size());
  EXPECT_EQ(restored.events().back(), state_.events().back());
  EXPECT_EQ(restored.last_event_seq(), state_.last_event_seq());
  EXPECT_EQ(restored.sink_cursors().at("ops"), 42u);
}

}  // namespace
}  // namespace gpool::state

namespace gpool::state {
namespace {

TEST_F(NodeLossStateTest, ProbeResultsRaiseAndClearASlowConditionApartFromTheWorkers) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  Do(RegisterNodeCmd{MakeNode("n2", 8), {}});
  ProbeResult slow{.node = "n1", .bandwidth_kib_s = 20 * 1024, .slow = true, .message = "20 MiB/s, median 900"};
  ProbeResult fine{.node = "n2", .bandwidth_kib_s = 900 * 1024, .slow = false};
  Do(ProbeResultCmd{ProbeKind::kNetwork, {slow, fine, ProbeResult{.node = "gone", .slow = true}}});
  ASSERT_EQ(state_.FindNode("n1")->probe_health.size(), 1u);
  EXPECT_EQ(state_.FindNode("n1")->probe_health[0].kind, "slow");
  EXPECT_EQ(state_.FindNode("n1")->probe_health[0].device, "probe/network");
  EXPECT_TRUE(state_.FindNode("n2")->probe_health.empty());
  // The worker's own report does not wipe it.
  Do(NodeHealthCmd{"n1", {}});
  EXPECT_EQ(state_.FindNode("n1")->AllHealth().size(), 1u);
  slow.slow = false;
  Do(ProbeResultCmd{ProbeKind::kNetwork, {slow}});
  EXPECT_TRUE(state_.FindNode("n1")->probe_health.empty());
  const auto kinds = EventKinds();
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "health-raised"), 1);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "health-cleared"), 1);
}

}  // namespace
}  // namespace gpool::state
