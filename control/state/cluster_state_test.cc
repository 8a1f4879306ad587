#include "control/state/cluster_state.h"
#include "control/state/test_specs.h"

#include <gtest/gtest.h>

namespace gpool::state {
namespace {

using testing::MakeNode;

JobSpec MakeJob(const std::string& name, uint32_t replicas, uint32_t gpus) {
  JobSpec spec;
  spec.name = name;
  TaskGroupSpec group;
  group.replicas = replicas;
  group.command = {"true"};
  group.resources = Resources{gpus, 1000, 1024};
  spec.tasks.push_back(group);
  return spec;
}

class ClusterStateTest : public ::testing::Test {
 protected:
  ApplyResult Do(CommandBody body) { return state_.Apply(++index_, Command{static_cast<int64_t>(1000 * index_), std::move(body)}); }

  uint64_t Submit(const std::string& name, uint32_t replicas, uint32_t gpus, const std::string& key = "") {
    ApplyResult r = Do(SubmitJobCmd{MakeJob(name, replicas, gpus), key});
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    return r.job_id;
  }

  PlanBind Bind(uint64_t job, uint32_t task, const std::string& node, std::vector<uint32_t> gpus) {
    return PlanBind{job, task, node, std::move(gpus), 1000, 1024};
  }

  ApplyResult Event(uint64_t job, uint32_t task, const std::string& node, const std::string& kind, int32_t code = 0) {
    TaskEvent event;
    event.node = node;
    event.task = TaskId{JobId(job), task, 0};
    event.kind = kind;
    event.exit_code = code;
    event.pid = 100 + task;
    return Do(TaskEventCmd{event});
  }

  ClusterState state_;
  uint64_t index_ = 0;
};

TEST_F(ClusterStateTest, JobRunsToSuccessAndFreesItsGpus) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 8), {}}).status.ok());
  uint64_t job = Submit("train", 2, 2);
  EXPECT_EQ(state_.FindJob(JobId(job))->state, JobState::kPending);

  ApplyResult plan = Do(ApplyPlanCmd{{Bind(job, 0, "n1", {0, 1}), Bind(job, 1, "n1", {2, 3})}, {}});
  EXPECT_EQ(plan.binds_applied, 2u);
  EXPECT_EQ(state_.FindJob(JobId(job))->state, JobState::kRunning);
  EXPECT_EQ(state_.FindNode("n1")->gpu_owner.size(), 4u);
  EXPECT_EQ(state_.active_tasks().size(), 2u);

  EXPECT_TRUE(Event(job, 0, "n1", "started").status.ok());
  EXPECT_EQ(state_.FindJob(JobId(job))->tasks[0].state, TaskState::kRunning);
  EXPECT_TRUE(Event(job, 0, "n1", "exited", 0).status.ok());
  EXPECT_TRUE(Event(job, 0, "n1", "exited", 0).status.ok());  // redelivery changes nothing
  EXPECT_TRUE(Event(job, 1, "n1", "started").status.ok());
  EXPECT_TRUE(Event(job, 1, "n1", "exited", 0).status.ok());
  EXPECT_EQ(state_.FindJob(JobId(job))->state, JobState::kSucceeded);
  EXPECT_TRUE(state_.FindNode("n1")->gpu_owner.empty());
  EXPECT_EQ(state_.FindNode("n1")->cpu_milli_used, 0u);
  EXPECT_TRUE(state_.active_tasks().empty());
}

TEST_F(ClusterStateTest, StaticMigLayoutTheHardwareForbidsIsRefused) {
  NodeSpec node = MakeNode("n1", 1);
  node.gpus[0].model = "A100-SXM4-80GB";
  node.gpus[0].memory_mib = 81920;
  node.gpus[0].mig_mode = "static";
  node.gpus[0].mig_instances = {{"3g.40gb", 0, "MIG-a"}, {"4g.40gb", 0, "MIG-b"}};  // overlap
  const ApplyResult bad = Do(RegisterNodeCmd{node, {}});
  EXPECT_EQ(bad.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status.message().find("node.gpus[0].mig_instances: instance 1 (4g.40gb at 0)"), std::string::npos)
      << bad.status.ToString();
  EXPECT_EQ(state_.FindNode("n1"), nullptr);
  node.gpus[0].mig_instances = {{"3g.40gb", 4, "MIG-a"}, {"4g.40gb", 0, "MIG-b"}};
  EXPECT_TRUE(Do(RegisterNodeCmd{node, {}}).status.ok());
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
  Do(NodeStateCmd{"n1", "NotReady"});
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
  Do(ApplyPlanCmd{{PlanBind{done, 0, "n1", {}, 1000, 1024}}, {}});
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
  EXPECT_EQ(record->failure, "task 0 failed (exit code 3)");
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
  uint64_t job = Submit("a", 3, 1);
  Do(ApplyPlanCmd{{Bind(job, 0, "n1", {0}), Bind(job, 1, "n1", {1}), Bind(job, 2, "n1", {2})}, {}});
  Event(job, 0, "n1", "started");
  Event(job, 1, "n1", "started");
  // The worker reports task 0 still running, task 1 finished while we were away,
  // and has never heard of task 2 (still bound: it will be resent).
  std::vector<TaskReport> reports = {
      TaskReport{TaskId{JobId(job), 0, 0}, "Running", 100},
      TaskReport{TaskId{JobId(job), 1, 0}, "Succeeded", 101, 0},
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

TEST_F(ClusterStateTest, ReasonsAreRecordedForPendingJobsOnly) {
  uint64_t job = Submit("big", 1, 9);
  Do(ApplyPlanCmd{{}, {PlanReasons{job, {"3 nodes: insufficient GPUs"}}}});
  EXPECT_EQ(state_.FindJob(JobId(job))->reasons, (std::vector<std::string>{"3 nodes: insufficient GPUs"}));
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
  EXPECT_EQ(restored.active_tasks(), state_.active_tasks());
  EXPECT_EQ(restored.pending_jobs(), state_.pending_jobs());
  EXPECT_EQ(restored.FindNode("n1")->gpu_owner, state_.FindNode("n1")->gpu_owner);
  // The next job id and idempotency keys survive too.
  ApplyResult dup = restored.Apply(100, Command{1, SubmitJobCmd{MakeJob("a", 1, 0), "k"}});
  EXPECT_TRUE(dup.duplicate);
  ApplyResult next = restored.Apply(101, Command{1, SubmitJobCmd{MakeJob("c", 1, 0), ""}});
  EXPECT_EQ(next.job_id, 3u);
}

// The snapshot format as it was first written: one map whose lists hold
// every record. Snapshot() now packs record by record and must still write
// these exact bytes, so older snapshots and newer replicas agree.
struct SnapshotImageV1 {
  uint64_t applied_index = 0;
  uint64_t next_job_id = 1;
  std::vector<NodeRecord> nodes;
  std::vector<JobRecord> jobs;
  std::vector<QueueRecord> queues;
  template <typename V>
  void Fields(V& v) {
    v.Required("applied", applied_index);
    v.Required("next_job_id", next_job_id);
    v.Required("nodes", nodes);
    v.Required("jobs", jobs);
    v.Optional("queues", queues);
  }
};

TEST_F(ClusterStateTest, SnapshotBytesMatchTheImageFormat) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  Do(RegisterNodeCmd{MakeNode("n2", 8), {}});
  uint64_t a = Submit("a", 2, 1, "k");
  Submit("b", 1, 9);
  Do(ApplyPlanCmd{{Bind(a, 0, "n1", {0}), Bind(a, 1, "n2", {3})}, {}});
  Event(a, 0, "n1", "started");

  SnapshotImageV1 image;
  image.applied_index = state_.applied_index();
  image.next_job_id = 3;
  for (const auto& [name, node] : state_.nodes()) image.nodes.push_back(node);
  for (const auto& [id, job] : state_.jobs()) image.jobs.push_back(job);
  for (const auto& [name, queue] : state_.queues()) image.queues.push_back(queue);
  EXPECT_EQ(state_.Snapshot(), wire::PackToString(image));
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
  u.op = op;
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
  EXPECT_EQ(view.labels, (std::map<std::string, std::string>{{"rack", "r1"}, {"team", "vision"}, {"zone", "b"}}));
  UpdateNode unlabel = Update("n1", "label");
  unlabel.remove_labels = {"team"};
  ASSERT_TRUE(Do(UpdateNodeCmd{unlabel}).status.ok());
  // Re-registration replaces the spec's labels, not the operator's.
  spec.labels = {{"rack", "r2"}};
  ASSERT_TRUE(Do(RegisterNodeCmd{spec, {}}).status.ok());
  EXPECT_EQ(state_.BuildView().nodes.at(0).labels,
            (std::map<std::string, std::string>{{"rack", "r2"}, {"zone", "b"}}));

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
  EXPECT_EQ(Do(UpdateNodeCmd{Update("n1", "drain")}).status.code(), StatusCode::kInvalidArgument);
  UpdateNode pool = Update("n1", "pool");
  pool.pool = "shared";
  EXPECT_EQ(Do(UpdateNodeCmd{pool}).status.code(), StatusCode::kInvalidArgument);
  UpdateNode empty = Update("n1", "label");
  EXPECT_EQ(Do(UpdateNodeCmd{empty}).status.code(), StatusCode::kInvalidArgument);
  UpdateNode bad_key = Update("n1", "label");
  bad_key.labels = {{"bad key", "x"}};
  EXPECT_EQ(Do(UpdateNodeCmd{bad_key}).status.code(), StatusCode::kInvalidArgument);
  UpdateNode bad_value = Update("n1", "label");
  bad_value.labels = {{"team", "a b"}};
  EXPECT_EQ(Do(UpdateNodeCmd{bad_value}).status.code(), StatusCode::kInvalidArgument);
  UpdateNode both = Update("n1", "label");
  both.labels = {{"team", "x"}};
  both.remove_labels = {"team"};
  Status conflict = Do(UpdateNodeCmd{both}).status;
  EXPECT_EQ(conflict.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(conflict.message().find("both set and removed"), std::string::npos) << conflict.ToString();
  // Applied index moves (the entries were committed) but the state did not.
  ClusterState a, b;
  ASSERT_TRUE(a.Restore(before).ok());
  ASSERT_TRUE(b.Restore(state_.Snapshot()).ok());
  EXPECT_EQ(a.FindNode("n1")->cordoned, b.FindNode("n1")->cordoned);
  EXPECT_EQ(a.FindNode("n1")->pool, b.FindNode("n1")->pool);
  EXPECT_EQ(a.FindNode("n1")->admin_labels, b.FindNode("n1")->admin_labels);
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
  EXPECT_EQ(back.op, "label");
  EXPECT_EQ(back.labels, update.labels);
  EXPECT_EQ(back.remove_labels, update.remove_labels);
}

}  // namespace
}  // namespace gpool::state
