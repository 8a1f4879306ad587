#include "control/state/cluster_state.h"
#include "control/state/cluster_state_fixture.h"
#include "control/state/test_specs.h"
#include "protocol/messages_client.h"
#include "protocol/model/node_update.h"
#include "protocol/model/task_report.h"
#include "protocol/validate.h"
#include "protocol/wire.h"

#include <gtest/gtest.h>

namespace gpool::state {
namespace {

using testing::MakeNode;

TEST_F(ClusterStateTest, JobRunsToSuccessAndFreesItsGpus) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 8), {}}).status.ok());
  uint64_t job = Submit("train", 2, 2);
  EXPECT_EQ(state_.FindJob(JobId(job))->state, JobState::kPending);

  ApplyResult plan = Do(ApplyPlanCmd{{Bind(job, 0, "n1", {0, 1}), Bind(job, 1, "n1", {2, 3})}, {}});
  EXPECT_EQ(plan.binds_applied, 2u);
  EXPECT_EQ(state_.FindJob(JobId(job))->state, JobState::kRunning);
  EXPECT_EQ(state_.FindNode("n1")->gpu_owner.size(), 4u);
  EXPECT_EQ(state_.active_task_count(), 2u);

  EXPECT_TRUE(Event(job, 0, "n1", "started").status.ok());
  EXPECT_EQ(state_.FindJob(JobId(job))->tasks[0].state, TaskState::kRunning);
  EXPECT_TRUE(Event(job, 0, "n1", "exited", 0).status.ok());
  EXPECT_TRUE(Event(job, 0, "n1", "exited", 0).status.ok());  // redelivery changes nothing
  EXPECT_TRUE(Event(job, 1, "n1", "started").status.ok());
  EXPECT_TRUE(Event(job, 1, "n1", "exited", 0).status.ok());
  EXPECT_EQ(state_.FindJob(JobId(job))->state, JobState::kSucceeded);
  EXPECT_TRUE(state_.FindNode("n1")->gpu_owner.empty());
  EXPECT_EQ(state_.FindNode("n1")->cpu_milli_used, 0u);
  EXPECT_EQ(state_.active_task_count(), 0u);
}

// A rule of the edge (the node registry checks it before the log): the
// hardware's MIG placement table.
TEST(MigLayoutTest, StaticMigLayoutTheHardwareForbidsIsRefused) {
  NodeSpec node = MakeNode("n1", 1);
  node.gpus[0].model = "A100-SXM4-80GB";
  node.gpus[0].memory_mib = 81920;
  node.gpus[0].mig_mode = "static";
  node.gpus[0].mig_instances = {{"3g.40gb", 0, "MIG-a"}, {"4g.40gb", 0, "MIG-b"}};  // overlap
  const Status bad = ClusterState::CheckMigLayouts(node);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("node.gpus[0].mig_instances: instance 1 (4g.40gb at 0)"), std::string::npos)
      << bad.ToString();
  node.gpus[0].mig_instances = {{"3g.40gb", 4, "MIG-a"}, {"4g.40gb", 0, "MIG-b"}};
  EXPECT_TRUE(ClusterState::CheckMigLayouts(node).ok());
}

// Apply checks what the state needs, not today's rules: an entry written
// under other rules (a name the validator now refuses, more tasks than the
// default limit) replays the same; what the state cannot hold is refused.
TEST_F(ClusterStateTest, ApplyReplaysWhatTheEdgeAdmittedUnderOtherRules) {
  JobSpec old = MakeJob("old job name", 1, 0);
  old.tasks[0].replicas = 12'000;
  ASSERT_FALSE(ValidateJobSpec(old).ok());
  const ApplyResult r = Do(SubmitJobCmd{old, ""});
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(state_.FindJob(JobId(r.job_id))->tasks.size(), 12'000u);
  NodeSpec twice = MakeNode("n9", 2);
  twice.gpus[1].index = twice.gpus[0].index;
  EXPECT_EQ(Do(RegisterNodeCmd{twice, {}}).status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(state_.FindNode("n9"), nullptr);
}

TEST_F(ClusterStateTest, PlanThatDoubleBooksAGpuIsRejectedWhole) {
  Do(RegisterNodeCmd{MakeNode("n1", 4), {}});
  uint64_t a = Submit("a", 1, 2);
  uint64_t b = Submit("b", 2, 1);
  ASSERT_EQ(Do(ApplyPlanCmd{{Bind(a, 0, "n1", {0, 1})}, {}}).binds_applied, 1u);
  // b's second task collides with a's GPU 1: the whole of b is dropped.
  ApplyResult r = Do(ApplyPlanCmd{{Bind(b, 0, "n1", {2}), Bind(b, 1, "n1", {1})}, {}});
  EXPECT_EQ(r.binds_applied, 0u);
  EXPECT_EQ(r.jobs_rejected, 1u);
  EXPECT_EQ(state_.FindJob(JobId(b))->state, JobState::kPending);
  EXPECT_EQ(state_.FindNode("n1")->gpu_owner.size(), 2u);
}

TEST_F(ClusterStateTest, PartialGangPlanIsRejected) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  uint64_t job = Submit("gang", 2, 1);
  ApplyResult r = Do(ApplyPlanCmd{{Bind(job, 0, "n1", {0})}, {}});
  EXPECT_EQ(r.binds_applied, 0u);
  EXPECT_EQ(state_.FindJob(JobId(job))->state, JobState::kPending);
}

TEST_F(ClusterStateTest, PlanOnNotReadyNodeOrUnknownGpuIsRejected) {
  Do(RegisterNodeCmd{MakeNode("n1", 2), {}});
  uint64_t job = Submit("a", 1, 1);
  EXPECT_EQ(Do(ApplyPlanCmd{{Bind(job, 0, "n1", {7})}, {}}).binds_applied, 0u);
  Do(NodeStateCmd{"n1", NodeState::kNotReady});
  EXPECT_EQ(Do(ApplyPlanCmd{{Bind(job, 0, "n1", {0})}, {}}).binds_applied, 0u);
}

TEST_F(ClusterStateTest, IdempotencyKeyReturnsTheFirstJob) {
  uint64_t first = Submit("a", 1, 0, "key-1");
  ApplyResult again = Do(SubmitJobCmd{MakeJob("a", 1, 0), "key-1"});
  EXPECT_TRUE(again.duplicate);
  EXPECT_EQ(again.job_id, first);
  EXPECT_EQ(state_.jobs().size(), 1u);
}

TEST_F(ClusterStateTest, InvalidSpecChangesNothing) {
  JobSpec bad = MakeJob("a", 1, 0);
  bad.tasks[0].replicas = 0;
  ApplyResult r = Do(SubmitJobCmd{bad, ""});
  EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(state_.jobs().empty());
}

TEST_F(ClusterStateTest, CancelStopsRunningTasksAndFinishesWhenTheyExit) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  uint64_t job = Submit("a", 1, 1);
  Do(ApplyPlanCmd{{Bind(job, 0, "n1", {0})}, {}});
  Event(job, 0, "n1", "started");
  ApplyResult r = Do(CancelJobCmd{job, 1500});
  EXPECT_TRUE(r.status.ok());
  EXPECT_EQ(state_.FindJob(JobId(job))->tasks[0].stop_grace_ms, 1500u);
  EXPECT_EQ(r.job_state, "Running");
  EXPECT_TRUE(state_.FindJob(JobId(job))->tasks[0].stop_requested);
  // Resources are held until the exit is committed.
  EXPECT_EQ(state_.FindNode("n1")->gpu_owner.size(), 1u);
  Event(job, 0, "n1", "exited", 143);
  EXPECT_EQ(state_.FindJob(JobId(job))->state, JobState::kCancelled);
  EXPECT_EQ(state_.FindJob(JobId(job))->tasks[0].state, TaskState::kCancelled);
  EXPECT_TRUE(state_.FindNode("n1")->gpu_owner.empty());
  ApplyResult again = Do(CancelJobCmd{job});  // a retry is not an error
  EXPECT_TRUE(again.status.ok());
  EXPECT_EQ(again.job_state, "Cancelled");
  EXPECT_EQ(Do(CancelJobCmd{999}).status.code(), StatusCode::kNotFound);
  uint64_t done = Submit("b", 1, 0);
  Do(ApplyPlanCmd{{PlanBind{JobId(done), 0, "n1", {}, 1000, 1024}}, {}});
  Event(done, 0, "n1", "exited", 0);
  EXPECT_EQ(Do(CancelJobCmd{done}).status.code(), StatusCode::kFailedPrecondition);
}

TEST_F(ClusterStateTest, OneFailedTaskFailsTheGangAndStopsTheRest) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  uint64_t job = Submit("a", 2, 1);
  Do(ApplyPlanCmd{{Bind(job, 0, "n1", {0}), Bind(job, 1, "n1", {1})}, {}});
  Event(job, 0, "n1", "started");
  Event(job, 1, "n1", "started");
  Event(job, 0, "n1", "exited", 3);
  const JobRecord* record = state_.FindJob(JobId(job));
  EXPECT_EQ(record->state, JobState::kRunning);
  EXPECT_TRUE(record->tasks[1].stop_requested);
  Event(job, 1, "n1", "exited", 143);
  EXPECT_EQ(record->state, JobState::kFailed);
  EXPECT_EQ(record->failure(), "task 0 failed (exit code 3)");
}

TEST_F(ClusterStateTest, EventFromWrongNodeIsRefused) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  Do(RegisterNodeCmd{MakeNode("n2", 8), {}});
  uint64_t job = Submit("a", 1, 1);
  Do(ApplyPlanCmd{{Bind(job, 0, "n1", {0})}, {}});
  EXPECT_EQ(Event(job, 0, "n2", "exited").status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(state_.FindJob(JobId(job))->tasks[0].state, TaskState::kBound);
}

TEST_F(ClusterStateTest, ReRegistrationReconcilesTasks) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  JobSpec spec = MakeJob("a", 3, 1);
  spec.restart.policy = "never";  // requeues on loss: node_loss_state_test.cc
  const uint64_t job = Do(SubmitJobCmd{spec, ""}).job_id;
  Do(ApplyPlanCmd{{Bind(job, 0, "n1", {0}), Bind(job, 1, "n1", {1}), Bind(job, 2, "n1", {2})}, {}});
  Event(job, 0, "n1", "started");
  Event(job, 1, "n1", "started");
  // The worker reports task 0 still running, task 1 finished while we were away,
  // and has never heard of task 2 (still bound: it will be resent).
  std::vector<TaskReport> reports = {
      TaskReport{TaskId{JobId(job), 0, 0}, TaskState::kRunning, 100},
      TaskReport{TaskId{JobId(job), 1, 0}, TaskState::kSucceeded, 101, 0},
  };
  Do(RegisterNodeCmd{MakeNode("n1", 8), reports});
  const JobRecord* record = state_.FindJob(JobId(job));
  EXPECT_EQ(record->tasks[0].state, TaskState::kRunning);
  EXPECT_EQ(record->tasks[1].state, TaskState::kSucceeded);
  EXPECT_EQ(record->tasks[2].state, TaskState::kBound);
  // Now the worker restarts and knows nothing: the running task is lost.
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  EXPECT_EQ(record->tasks[0].state, TaskState::kLost);
  EXPECT_EQ(record->state, JobState::kRunning);  // task 2 still has to be stopped
  EXPECT_TRUE(record->tasks[2].stop_requested);
}

TEST_F(ClusterStateTest, ARefusedBindFailsTheTaskOnceAndOnlyWhereItWasSent) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 8), {}}).status.ok());
  uint64_t job = Submit("train", 1, 2);
  ASSERT_EQ(Do(ApplyPlanCmd{{Bind(job, 0, "n1", {0, 1})}, {}}).binds_applied, 1u);
  const TaskId task{JobId(job), 0, 0};
  EXPECT_EQ(Do(RefuseBindCmd{task, "n2", "no GPU 0"}).status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Do(RefuseBindCmd{TaskId{JobId(job), 0, 1}, "n1", "no GPU 0"}).status.code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(state_.FindJob(JobId(job))->state, JobState::kRunning);
  ASSERT_TRUE(Do(RefuseBindCmd{task, "n1", "no GPU 0"}).status.ok());
  EXPECT_EQ(state_.FindJob(JobId(job))->state, JobState::kFailed);
  EXPECT_EQ(state_.FindJob(JobId(job))->tasks[0].message(), "worker refused the task: no GPU 0");
  EXPECT_TRUE(state_.FindNode("n1")->gpu_owner.empty());
  ASSERT_TRUE(Do(RefuseBindCmd{task, "n1", "again"}).status.ok());
  EXPECT_EQ(state_.FindJob(JobId(job))->tasks[0].message(), "worker refused the task: no GPU 0");
  // It travels through the log like every command.
  auto decoded = DecodeCommand(EncodeCommand(Command{7, RefuseBindCmd{task, "n1", "x"}}));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(std::get<RefuseBindCmd>(decoded->body).message, "x");
}

TEST_F(ClusterStateTest, ReasonsAreRecordedForPendingJobsOnly) {
  uint64_t job = Submit("big", 1, 9);
  const topology::PendingReason three = topology::PendingReason::Nodes(topology::PendingCode::kNodeGpus, 3);
  Do(ApplyPlanCmd{.pending = {PlanReasons{JobId(job), {three}, {}}}});
  EXPECT_EQ(state_.FindJob(JobId(job))->reasons(), (std::vector<topology::PendingReason>{three}));
  EXPECT_EQ(topology::RenderPendingReasons(state_.FindJob(JobId(job))->reasons()),
            (std::vector<std::string>{"3 nodes: insufficient GPUs"}));
}

// The scheduler's plan is the command: what it returns is what the log holds.
TEST(ApplyPlanCommandTest, APlanTravelsThroughTheLogUnchanged) {
  ApplyPlanCmd plan;
  PlanBind bind{JobId(4), 2, "n1", {0, 3}, 1500, 2048};
  bind.grant = DeviceGrant{.shared = true, .gpu_memory_mib = 1024, .gpu_compute_pct = 20, .sharing_qos = "burst-share"};
  bind.numa_node = 1;
  plan.binds = {bind};
  plan.evictions = {PlanEviction{JobId(3), 1, JobId(4), "preempted by job 4 (high)"}};
  plan.pending = {PlanReasons{JobId(5), {topology::PendingReason::Nodes(topology::PendingCode::kNodeGpus, 7)}, {}}};
  auto decoded = DecodeCommand(EncodeCommand(Command{9, plan}));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const auto& back = std::get<ApplyPlanCmd>(decoded->body);
  ASSERT_EQ(back.binds.size(), 1u);
  EXPECT_EQ(back.binds[0].job, JobId(4));
  EXPECT_EQ(back.binds[0].task_index, 2u);
  EXPECT_EQ(back.binds[0].gpu_indices, (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(back.binds[0].cpu_milli, 1500u);
  EXPECT_EQ(back.binds[0].grant, bind.grant);
  EXPECT_EQ(back.binds[0].numa_node, 1);
  ASSERT_EQ(back.evictions.size(), 1u);
  EXPECT_EQ(back.evictions[0].for_job, JobId(4));
  EXPECT_EQ(back.evictions[0].reason, "preempted by job 4 (high)");
  ASSERT_EQ(back.pending.size(), 1u);
  EXPECT_EQ(back.pending[0].reasons, plan.pending[0].reasons);
}

// The log entry as coordinators wrote it before reasons were codes.
struct TextReasons {
  uint64_t job_id = 0;
  std::vector<std::string> reasons;
  template <typename V>
  void Fields(V& v) {
    v.Required("job", job_id);
    v.Required("reasons", reasons);
  }
};
struct TextReasonsPlan {
  std::vector<TextReasons> reasons;
  template <typename V>
  void Fields(V& v) {
    v.Optional("reasons", reasons);
  }
};

TEST_F(ClusterStateTest, ReasonsWrittenAsTextBeforeCodesStillReplay) {
  uint64_t job = Submit("big", 1, 9);
  msgpack::sbuffer buffer;
  wire::Packer p(buffer);
  p.BeginMap(3);
  p.Field("cmd", "ApplyPlan");
  p.Field("t", int64_t{5000});
  p.Field("body", TextReasonsPlan{{TextReasons{job, {"3 nodes: insufficient GPUs"}}}});
  auto command = DecodeCommand(std::string_view(buffer.data(), buffer.size()));
  ASSERT_TRUE(command.ok()) << command.status().ToString();
  ASSERT_TRUE(state_.Apply(++index_, std::move(command).value()).status.ok());
  const JobRecord& record = *state_.FindJob(JobId(job));
  EXPECT_TRUE(record.reasons().empty());
  EXPECT_EQ(record.legacy_reasons(), (std::vector<std::string>{"3 nodes: insufficient GPUs"}));
  // Once placed, neither kind is kept.
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 9), {}}).status.ok());
  ASSERT_EQ(Do(ApplyPlanCmd{{Bind(job, 0, "n1", {0, 1, 2, 3, 4, 5, 6, 7, 8})}, {}}).binds_applied, 1u);
  EXPECT_FALSE(state_.FindJob(JobId(job))->waiting_reasons());
}

TEST_F(ClusterStateTest, SnapshotRestoresEverythingIncludingIndexes) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  uint64_t a = Submit("a", 2, 1, "k");
  Submit("b", 1, 9);
  Do(ApplyPlanCmd{{Bind(a, 0, "n1", {0}), Bind(a, 1, "n1", {1})}, {}});
  Event(a, 0, "n1", "started");

  ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  EXPECT_EQ(restored.Snapshot(), state_.Snapshot());
  EXPECT_EQ(restored.applied_index(), state_.applied_index());
  EXPECT_EQ(restored.ActiveTasks(), state_.ActiveTasks());
  EXPECT_EQ(restored.active_task_count(), state_.active_task_count());
  EXPECT_EQ(restored.pending_jobs(), state_.pending_jobs());
  EXPECT_EQ(restored.FindNode("n1")->gpu_owner, state_.FindNode("n1")->gpu_owner);
  // The next job id and idempotency keys survive too.
  ApplyResult dup = restored.Apply(100, Command{1, SubmitJobCmd{MakeJob("a", 1, 0), "k"}});
  EXPECT_TRUE(dup.duplicate);
  ApplyResult next = restored.Apply(101, Command{1, SubmitJobCmd{MakeJob("c", 1, 0), ""}});
  EXPECT_EQ(next.job_id, 3u);
}

TEST_F(ClusterStateTest, DistinctIdempotencyKeysGiveDistinctJobs) {
  // Keys are indexed by their hash; a match is confirmed against the job's key.
  uint64_t first = Submit("a", 1, 0, "key-1");
  uint64_t second = Submit("b", 1, 0, "key-2");
  EXPECT_NE(first, second);
  ApplyResult dup = Do(SubmitJobCmd{MakeJob("c", 1, 0), "key-2"});
  EXPECT_TRUE(dup.duplicate);
  EXPECT_EQ(dup.job_id, second);
}

TEST_F(ClusterStateTest, CorruptSnapshotIsRejected) {
  ClusterState restored;
  EXPECT_EQ(restored.Restore("not a snapshot").code(), StatusCode::kMalformed);
}

UpdateNode Update(const std::string& node, const std::string& op) {
  UpdateNode u;
  u.node = node;
  u.op = EnumFromName<NodeUpdateOp>(op).value();
  return u;
}

TEST_F(ClusterStateTest, CordonKeepsNewWorkOffANodeAndUncordonLetsItBack) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 8), {}}).status.ok());
  ASSERT_TRUE(Do(UpdateNodeCmd{Update("n1", "cordon")}).status.ok());
  EXPECT_TRUE(state_.FindNode("n1")->cordoned);
  EXPECT_TRUE(state_.BuildView().nodes.at(0).cordoned);
  uint64_t job = Submit("train", 1, 1);
  ApplyResult refused = Do(ApplyPlanCmd{{Bind(job, 0, "n1", {0})}, {}});
  EXPECT_EQ(refused.binds_applied, 0u) << "a plan made before the cordon must not land on it";
  // Re-registration (a worker restart) keeps the operator's cordon.
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 8), {}}).status.ok());
  EXPECT_TRUE(state_.FindNode("n1")->cordoned);
  ASSERT_TRUE(Do(UpdateNodeCmd{Update("n1", "uncordon")}).status.ok());
  EXPECT_EQ(Do(ApplyPlanCmd{{Bind(job, 0, "n1", {0})}, {}}).binds_applied, 1u);
}

TEST_F(ClusterStateTest, OperatorLabelsOverlayTheSpecAndPoolsMove) {
  NodeSpec spec = MakeNode("n1", 8);
  spec.labels = {{"rack", "r1"}, {"zone", "a"}};
  ASSERT_TRUE(Do(RegisterNodeCmd{spec, {}}).status.ok());
  UpdateNode label = Update("n1", "label");
  label.labels = {{"zone", "b"}, {"team", "vision"}};
  ASSERT_TRUE(Do(UpdateNodeCmd{label}).status.ok());
  auto view = state_.BuildView().nodes.at(0);
  EXPECT_EQ(view.labels, (std::map<std::string, std::string>{{"gpool.io/node", "n1"}, {"rack", "r1"}, {"team", "vision"}, {"zone", "b"}}));
  UpdateNode unlabel = Update("n1", "label");
  unlabel.remove_labels = {"team"};
  ASSERT_TRUE(Do(UpdateNodeCmd{unlabel}).status.ok());
  // Re-registration replaces the spec's labels, not the operator's.
  spec.labels = {{"rack", "r2"}};
  ASSERT_TRUE(Do(RegisterNodeCmd{spec, {}}).status.ok());
  EXPECT_EQ(state_.BuildView().nodes.at(0).labels,
            (std::map<std::string, std::string>{{"gpool.io/node", "n1"}, {"rack", "r2"}, {"zone", "b"}}));

  EXPECT_EQ(state_.FindNode("n1")->pool, "public");
  UpdateNode pool = Update("n1", "pool");
  pool.pool = "exclusive";
  ASSERT_TRUE(Do(UpdateNodeCmd{pool}).status.ok());
  EXPECT_EQ(state_.BuildView().nodes.at(0).pool, "exclusive");

  // All of it survives a snapshot.
  ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  EXPECT_EQ(restored.FindNode("n1")->pool, "exclusive");
  EXPECT_EQ(restored.FindNode("n1")->admin_labels, (std::map<std::string, std::string>{{"zone", "b"}}));
}

TEST_F(ClusterStateTest, BadNodeUpdatesAreTypedAndChangeNothing) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 8), {}}).status.ok());
  const std::string before = state_.Snapshot();
  EXPECT_EQ(Do(UpdateNodeCmd{Update("ghost", "cordon")}).status.code(), StatusCode::kNotFound);
  // (The rules for pools, label keys and values are the gateway's:
  // GatewayTest.BadNodeUpdatesAreRefusedBeforeTheLog.)
  // An unknown op never reaches apply: decoding the entry refuses it
  // (CommandReplayTest.AnUnknownValueIsRefusedAtDecodeTyped).
  // Applied index moves (the entries were committed) but the state did not.
  ClusterState a, b;
  ASSERT_TRUE(a.Restore(before).ok());
  ASSERT_TRUE(b.Restore(state_.Snapshot()).ok());
  EXPECT_EQ(a.FindNode("n1")->cordoned, b.FindNode("n1")->cordoned);
  EXPECT_EQ(a.FindNode("n1")->pool, b.FindNode("n1")->pool);
  EXPECT_EQ(a.FindNode("n1")->admin_labels, b.FindNode("n1")->admin_labels);
}

// One plan carries a whole scheduling cycle: many jobs on many nodes. Each
// job is checked against the state its predecessors in the plan left, so a
// job colliding with an earlier one's GPU (or with itself) is dropped whole
// while every other job lands.
TEST_F(ClusterStateTest, LargePlanAppliesEveryJobThatFitsAndDropsOnlyCollidingOnes) {
  constexpr uint32_t kNodes = 40;
  for (uint32_t n = 0; n < kNodes; ++n) Do(RegisterNodeCmd{MakeNode("n" + std::to_string(n), 8), {}});
  ApplyPlanCmd plan;
  std::vector<uint64_t> jobs;
  for (uint32_t j = 0; j < kNodes; ++j) {  // a job of 8 one-GPU tasks per node
    const uint64_t job = Submit("wide-" + std::to_string(j), 8, 1);
    jobs.push_back(job);
    for (uint32_t t = 0; t < 8; ++t) plan.binds.push_back(Bind(job, t, "n" + std::to_string(j), {t}));
  }
  const uint64_t late = Submit("late", 2, 1);    // wants a GPU an earlier job of the plan took
  plan.binds.push_back(Bind(late, 0, "n0", {3}));
  plan.binds.push_back(Bind(late, 1, "n1", {9}));
  const uint64_t twice = Submit("twice", 2, 1);  // books one GPU for both its tasks
  Do(RegisterNodeCmd{MakeNode("spare", 2), {}});
  plan.binds.push_back(Bind(twice, 0, "spare", {0}));
  plan.binds.push_back(Bind(twice, 1, "spare", {0}));
  const ApplyResult r = Do(plan);
  EXPECT_EQ(r.binds_applied, kNodes * 8);
  EXPECT_EQ(r.jobs_rejected, 2u);
  EXPECT_EQ(state_.active_task_count(), kNodes * 8);
  for (uint32_t n = 0; n < kNodes; ++n) EXPECT_EQ(state_.FindNode("n" + std::to_string(n))->gpu_owner.size(), 8u);
  EXPECT_TRUE(state_.FindNode("spare")->gpu_owner.empty());
  EXPECT_EQ(state_.FindJob(JobId(late))->state, JobState::kPending);
  EXPECT_EQ(state_.FindJob(JobId(twice))->state, JobState::kPending);
  EXPECT_EQ(state_.jobs_in_state(JobState::kRunning), kNodes);
  EXPECT_EQ(state_.jobs_in_state(JobState::kPending), 2u);
  // The node a rejected job named is untouched: CPU and memory too.
  EXPECT_EQ(state_.FindNode("spare")->cpu_milli_used, 0u);
}

// A plan that over-asks a node's CPU across two jobs: the second job is
// checked against what the first one already holds.
TEST_F(ClusterStateTest, LaterJobsOfAPlanSeeTheCpuEarlierOnesTook) {
  NodeSpec node = MakeNode("n1", 4);
  node.cpu_milli = 1500;  // one task's 1000 fits, two do not
  Do(RegisterNodeCmd{node, {}});
  const uint64_t a = Submit("a", 1, 1);
  const uint64_t b = Submit("b", 1, 1);
  const ApplyResult r = Do(ApplyPlanCmd{{Bind(a, 0, "n1", {0}), Bind(b, 0, "n1", {1})}, {}});
  EXPECT_EQ(r.binds_applied, 1u);
  EXPECT_EQ(r.jobs_rejected, 1u);
  EXPECT_EQ(state_.FindNode("n1")->cpu_milli_used, 1000u);
}

// The dispatcher's index: a task is in it exactly while a command to its
// worker is due, and every change of what is due gets a newer sequence number.
TEST_F(ClusterStateTest, CommandsDueFollowTheTaskLifecycle) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  const uint64_t a = Submit("a", 1, 1);
  const uint64_t b = Submit("b", 1, 1);
  EXPECT_EQ(state_.commands_due_count(), 0u);
  Do(ApplyPlanCmd{{Bind(a, 0, "n1", {0}), Bind(b, 0, "n1", {1})}, {}});
  const TaskId ta{JobId(a), 0, 0};
  const TaskId tb{JobId(b), 0, 0};
  ASSERT_EQ(state_.commands_due_count(), 2u);
  ASSERT_TRUE(state_.command_due(ta).has_value());
  EXPECT_FALSE(state_.command_due(ta)->stop);
  const uint64_t bind_seq = state_.command_due(tb)->seq;
  EXPECT_EQ(state_.command_seq(), bind_seq);
  auto due_after = [&](uint64_t seq) {
    std::vector<TaskId> ids;
    state_.ForEachCommandDueAfter(seq, [&](const TaskRecord& task, const ClusterState::CommandDue&) {
      ids.push_back(task.id);
    });
    return ids;
  };
  EXPECT_EQ(due_after(0), (std::vector<TaskId>{ta, tb}));
  EXPECT_EQ(due_after(bind_seq), std::vector<TaskId>{});

  Event(a, 0, "n1", "started");  // a runs: nothing to say to its worker
  EXPECT_FALSE(state_.command_due(ta).has_value());
  Do(CancelJobCmd{b, 0});  // b is cancelled before it started: a preempt replaces its bind
  ASSERT_TRUE(state_.command_due(tb).has_value());
  EXPECT_TRUE(state_.command_due(tb)->stop);
  EXPECT_GT(state_.command_due(tb)->seq, bind_seq);
  EXPECT_EQ(due_after(bind_seq), std::vector<TaskId>{tb}) << "only the change since is new";
  Do(CancelJobCmd{a, 0});  // a running task asked to stop
  EXPECT_TRUE(state_.command_due(ta)->stop);
  EXPECT_EQ(due_after(0), (std::vector<TaskId>{tb, ta})) << "in the order the commands became due";

  ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  ASSERT_EQ(restored.commands_due_count(), 2u);
  EXPECT_TRUE(restored.command_due(ta)->stop);
  EXPECT_TRUE(restored.command_due(tb)->stop);

  Event(a, 0, "n1", "exited", 0);
  Event(b, 0, "n1", "exited", 0);
  EXPECT_EQ(state_.commands_due_count(), 0u);
  EXPECT_EQ(due_after(0), std::vector<TaskId>{});
  EXPECT_EQ(state_.jobs_in_state(JobState::kCancelled), 2u);
  EXPECT_EQ(state_.jobs_in_state(JobState::kRunning), 0u);
}

// Many tasks coming and going: the index stays exact while its log is
// compacted behind it.
TEST_F(ClusterStateTest, CommandsDueStayExactThroughManyBindsAndStarts) {
  for (int n = 0; n < 50; ++n) Do(RegisterNodeCmd{MakeNode("n" + std::to_string(n), 8), {}});
  std::vector<uint64_t> jobs;
  for (int round = 0; round < 10; ++round) {
    ApplyPlanCmd plan;
    std::vector<uint64_t> bound;
    for (int n = 0; n < 50; ++n) {
      const uint64_t job = Submit("j", 8, 1);
      for (uint32_t t = 0; t < 8; ++t) plan.binds.push_back(Bind(job, t, "n" + std::to_string(n), {t}));
      bound.push_back(job);
    }
    ASSERT_EQ(Do(plan).binds_applied, 400u);
    EXPECT_EQ(state_.commands_due_count(), 400u);
    for (uint64_t job : bound) {
      for (uint32_t t = 0; t < 8; ++t) Event(job, t, "n" + std::to_string((job - 1) % 50), "started");
    }
    EXPECT_EQ(state_.commands_due_count(), 0u);
    size_t seen = 0;
    state_.ForEachCommandDueAfter(0, [&](const TaskRecord&, const ClusterState::CommandDue&) { ++seen; });
    EXPECT_EQ(seen, 0u);
    for (uint64_t job : bound) {
      for (uint32_t t = 0; t < 8; ++t) Event(job, t, "n" + std::to_string((job - 1) % 50), "exited", 0);
    }
  }
}

TEST(CommandsTest, RoundTripAndRejectGarbage) {
  Command command{1234, SubmitJobCmd{MakeJob("x", 2, 1), "key"}};
  auto decoded = DecodeCommand(EncodeCommand(command));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->time_ms, 1234);
  EXPECT_EQ(std::get<SubmitJobCmd>(decoded->body).spec, std::get<SubmitJobCmd>(command.body).spec);
  EXPECT_FALSE(DecodeCommand("\x93\x01").ok());
  EXPECT_EQ(CommandName(command.body), "SubmitJob");

  UpdateNode update = Update("n1", "label");
  update.labels = {{"team", "vision"}};
  update.remove_labels = {"old"};
  auto node_update = DecodeCommand(EncodeCommand(Command{5, UpdateNodeCmd{update}}));
  ASSERT_TRUE(node_update.ok()) << node_update.status().ToString();
  const auto& back = std::get<UpdateNodeCmd>(node_update->body).update;
  EXPECT_EQ(back.node, "n1");
  EXPECT_EQ(back.op, NodeUpdateOp::kLabel);
  EXPECT_EQ(back.labels, update.labels);
  EXPECT_EQ(back.remove_labels, update.remove_labels);
}

}  // namespace
}  // namespace gpool::state
