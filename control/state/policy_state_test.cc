// The state machine's side of the policy engine: the queue tree, evictions
// that requeue tasks as their next attempt, claims, gang minimums on apply,
// elastic jobs, and the view the scheduler gets.
#include <gtest/gtest.h>

#include "control/state/cluster_state.h"
#include "control/state/test_specs.h"
#include "protocol/model/node_update.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/task_report.h"

namespace gpool::state {
namespace {

using testing::MakeNode;

JobSpec QueueJob(const std::string& queue, uint32_t replicas, uint32_t gpus, uint32_t min = 0,
                const std::string& cls = "medium") {
  JobSpec spec;
  spec.name = "job";
  spec.queue = queue;
  spec.priority_class = cls;
  TaskGroupSpec group;
  group.replicas = replicas;
  group.min_replicas = min;
  group.command = {"true"};
  group.resources = Resources{gpus, 1000, 1024, ""};
  spec.tasks.push_back(group);
  return spec;
}

QueueSpec Queue(const std::string& name, const std::string& parent, Quota capability = {}, Quota deserved = {},
                Quota guarantee = {}) {
  return QueueSpec{name, parent, std::move(capability), std::move(deserved), std::move(guarantee)};
}

class PolicyStateTest : public ::testing::Test {
 protected:
  ApplyResult Do(CommandBody body) {
    return state_.Apply(++index_, Command{static_cast<int64_t>(1000 * index_), std::move(body)});
  }
  ApplyResult QueueOp(const std::string& op, QueueSpec spec) {
    return Do(UpdateQueueCmd{UpdateQueue{EnumFromName<gpool::QueueOp>(op).value(), std::move(spec)}});
  }
  uint64_t Submit(JobSpec spec) {
    ApplyResult r = Do(SubmitJobCmd{std::move(spec), ""});
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    return r.job_id;
  }
  ApplyResult Exit(uint64_t job, uint32_t task, uint32_t attempt, const std::string& node, int32_t signal = 15) {
    TaskEvent event;
    event.node = node;
    event.task = TaskId{JobId(job), task, attempt};
    event.kind = TaskEventKind::kExited;
    event.signal = signal;
    return Do(TaskEventCmd{event});
  }
  const TaskRecord& Task(uint64_t job, uint32_t index) { return state_.FindJob(JobId(job))->tasks[index]; }

  ClusterState state_;
  uint64_t index_ = 0;
};

TEST_F(PolicyStateTest, RootAndDefaultAlwaysExistAndCannotBeDeleted) {
  EXPECT_NE(state_.FindQueue("root"), nullptr);
  EXPECT_NE(state_.FindQueue("default"), nullptr);
  EXPECT_EQ(QueueOp("delete", Queue("default", "root")).status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(QueueOp("create", Queue("root", "")).status.code(), StatusCode::kAlreadyExists);
}

TEST_F(PolicyStateTest, QueueTreeRulesAreEnforcedAndBadChangesChangeNothing) {
  ASSERT_TRUE(QueueOp("create", Queue("org", "root", {{"gpu", 16}}, {{"gpu", 8}}, {{"gpu", 4}})).status.ok());
  ASSERT_TRUE(QueueOp("create", Queue("p1", "org", {{"gpu", 8}}, {}, {{"gpu", 3}})).status.ok());
  const auto before = state_.queues().size();
  EXPECT_EQ(QueueOp("create", Queue("p1", "org")).status.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(QueueOp("create", Queue("x", "nope")).status.code(), StatusCode::kNotFound);
  EXPECT_EQ(QueueOp("create", Queue("p2", "org", {{"gpu", 32}})).status.code(), StatusCode::kFailedPrecondition);
  // Guarantees of siblings add up within the parent's 4.
  EXPECT_EQ(QueueOp("create", Queue("p3", "org", {}, {}, {{"gpu", 2}})).status.code(), StatusCode::kFailedPrecondition);
  // (A queue's own rules, capability >= deserved and known resources, are the
  // gateway's: GatewayTest.BadQueueSpecsAreRefusedBeforeTheLog.)
  // Shrinking the parent below a child's capability is refused too.
  EXPECT_EQ(QueueOp("update", Queue("org", "root", {{"gpu", 4}}, {{"gpu", 4}}, {{"gpu", 4}})).status.code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(QueueOp("delete", Queue("org", "root")).status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(state_.queues().size(), before);
  EXPECT_EQ(state_.FindQueue("org")->spec.capability.at("gpu"), 16u);
  ASSERT_TRUE(QueueOp("update", Queue("p1", "ignored", {{"gpu", 6}})).status.ok());
  EXPECT_EQ(state_.FindQueue("p1")->spec.parent, "org");  // an update never moves a queue
  EXPECT_TRUE(QueueOp("delete", Queue("p1", "")).status.ok());
  EXPECT_EQ(state_.FindQueue("p1"), nullptr);
}

TEST_F(PolicyStateTest, JobsGoToExistingLeafQueuesOnly) {
  ASSERT_TRUE(QueueOp("create", Queue("org", "root")).status.ok());
  ASSERT_TRUE(QueueOp("create", Queue("p1", "org")).status.ok());
  EXPECT_EQ(Do(SubmitJobCmd{QueueJob("nope", 1, 1), ""}).status.code(), StatusCode::kNotFound);
  EXPECT_EQ(Do(SubmitJobCmd{QueueJob("org", 1, 1), ""}).status.code(), StatusCode::kInvalidArgument);
  const uint64_t job = Submit(QueueJob("p1", 1, 1));
  EXPECT_EQ(QueueOp("delete", Queue("p1", "org")).status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(QueueOp("create", Queue("sub", "p1")).status.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Do(CancelJobCmd{job, 0}).status.ok());
  EXPECT_TRUE(QueueOp("delete", Queue("p1", "org")).status.ok());
}

TEST_F(PolicyStateTest, QueuesSurviveASnapshot) {
  ASSERT_TRUE(QueueOp("create", Queue("team", "root", {{"gpu/A100", 8}})).status.ok());
  ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  ASSERT_NE(restored.FindQueue("team"), nullptr);
  EXPECT_EQ(restored.FindQueue("team")->spec.capability.at("gpu/A100"), 8u);
}

TEST_F(PolicyStateTest, APreemptionPolicyIsReplicatedSurvivesASnapshotAndReachesTheScheduler) {
  QueueSpec team = Queue("team", "root", {}, {{"gpu", 4}});
  team.preempting_classes = {"system"};
  team.low_reclaimable = false;
  ASSERT_TRUE(QueueOp("create", team).status.ok());
  ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  ASSERT_NE(restored.FindQueue("team"), nullptr);
  EXPECT_EQ(restored.FindQueue("team")->spec.preempting_classes, (std::vector<std::string>{"system"}));
  EXPECT_FALSE(restored.FindQueue("team")->spec.low_reclaimable);
  auto view = restored.BuildView(index_ * 1000);
  bool found = false;
  for (const auto& queue : view.queues) {
    if (queue.name == "team") {
      found = true;
      EXPECT_EQ(queue.preempting_classes, (std::vector<topology::PriorityClass>{topology::PriorityClass::kSystem}));
      EXPECT_FALSE(queue.low_reclaimable);
    } else {
      // The others keep the class rule's defaults.
      EXPECT_EQ(queue.preempting_classes,
                (std::vector<topology::PriorityClass>{topology::PriorityClass::kHigh, topology::PriorityClass::kSystem}));
      EXPECT_TRUE(queue.low_reclaimable);
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(PolicyStateTest, EvictedTaskRequeuesAsItsNextAttemptAndTheClaimHoldsUntilThePreemptorRuns) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 2), {}}).status.ok());
  const uint64_t low = Submit(QueueJob("default", 1, 2, 0, "low"));
  ASSERT_EQ(Do(ApplyPlanCmd{{PlanBind{JobId(low), 0, "n1", {0, 1}, 1000, 1024}}, {}, {}}).binds_applied, 1u);
  const uint64_t high = Submit(QueueJob("default", 1, 2, 0, "high"));

  ApplyPlanCmd evict;
  evict.evictions = {PlanEviction{JobId(low), 0, JobId(high), "preempted by job 2 (high)"}};
  ASSERT_TRUE(Do(evict).status.ok());
  EXPECT_TRUE(Task(low, 0).stop_requested);
  EXPECT_TRUE(Task(low, 0).evicted);
  EXPECT_EQ(state_.FindJob(JobId(high))->claimed_nodes(), (std::vector<std::string>{"n1"}));
  auto view = state_.BuildView(index_ * 1000);
  ASSERT_EQ(view.running.size(), 1u);
  EXPECT_EQ(view.running[0].stopping_for, high);

  ASSERT_TRUE(Exit(low, 0, 0, "n1").status.ok());
  const TaskRecord& requeued = Task(low, 0);
  EXPECT_EQ(requeued.state, TaskState::kPending);
  EXPECT_EQ(requeued.id.attempt, 1u);
  EXPECT_EQ(requeued.evicted_by(), (std::vector<uint64_t>{high}));
  EXPECT_NE(requeued.message().find("preempted by job 2"), std::string::npos);
  EXPECT_EQ(state_.FindJob(JobId(low))->state, JobState::kPending);
  EXPECT_TRUE(state_.FindNode("n1")->gpu_owner.empty());
  // The claim outlives the victim so the freed GPUs stay the preemptor's.
  view = state_.BuildView(index_ * 1000);
  bool seen = false;
  for (const auto& job : view.pending) {
    if (job.id != JobId(high)) continue;
    seen = true;
    EXPECT_EQ(job.claimed_nodes, (std::vector<std::string>{"n1"}));
  }
  EXPECT_TRUE(seen);
  ASSERT_EQ(Do(ApplyPlanCmd{{PlanBind{JobId(high), 0, "n1", {0, 1}, 1000, 1024}}, {}, {}}).binds_applied, 1u);
  EXPECT_TRUE(state_.FindJob(JobId(high))->claimed_nodes().empty());
  // The victim runs again later as attempt 1 and finishes.
  ASSERT_TRUE(Exit(high, 0, 0, "n1", 0).status.ok());
  ASSERT_EQ(Do(ApplyPlanCmd{{PlanBind{JobId(low), 0, "n1", {0, 1}, 1000, 1024}}, {}, {}}).binds_applied, 1u);
  ASSERT_TRUE(Exit(low, 0, 1, "n1", 0).status.ok());
  EXPECT_EQ(state_.FindJob(JobId(low))->state, JobState::kSucceeded);
}

TEST_F(PolicyStateTest, AStaleEvictionForAJobThatNoLongerWaitsIsIgnored) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 1), {}}).status.ok());
  const uint64_t low = Submit(QueueJob("default", 1, 1, 0, "low"));
  ASSERT_EQ(Do(ApplyPlanCmd{{PlanBind{JobId(low), 0, "n1", {0}, 1000, 1024}}, {}, {}}).binds_applied, 1u);
  const uint64_t high = Submit(QueueJob("default", 1, 1, 0, "high"));
  ASSERT_TRUE(Do(CancelJobCmd{high, 0}).status.ok());
  ApplyPlanCmd evict;
  evict.evictions = {PlanEviction{JobId(low), 0, JobId(high), "preempted"}, PlanEviction{JobId(low), 0, JobId(999), "preempted"}};
  ASSERT_TRUE(Do(evict).status.ok());
  EXPECT_FALSE(Task(low, 0).stop_requested);
  EXPECT_EQ(Task(low, 0).state, TaskState::kBound);
}

TEST_F(PolicyStateTest, CancelDuringEvictionCancelsInsteadOfRequeueing) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 1), {}}).status.ok());
  const uint64_t low = Submit(QueueJob("default", 1, 1, 0, "low"));
  ASSERT_EQ(Do(ApplyPlanCmd{{PlanBind{JobId(low), 0, "n1", {0}, 1000, 1024}}, {}, {}}).binds_applied, 1u);
  const uint64_t waiting = Submit(QueueJob("default", 1, 1));
  ApplyPlanCmd evict;
  evict.evictions = {PlanEviction{JobId(low), 0, JobId(waiting), "reclaimed"}};
  ASSERT_TRUE(Do(evict).status.ok());
  ASSERT_TRUE(Task(low, 0).stop_requested);
  ASSERT_TRUE(Do(CancelJobCmd{low, 0}).status.ok());
  ASSERT_TRUE(Exit(low, 0, 0, "n1").status.ok());
  EXPECT_EQ(state_.FindJob(JobId(low))->state, JobState::kCancelled);
}

TEST_F(PolicyStateTest, EvictingBelowAGangMinimumStopsTheWholeJob) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 4), {}}).status.ok());
  const uint64_t job = Submit(QueueJob("default", 3, 1, 2, "low"));
  ApplyPlanCmd place;
  for (uint32_t t = 0; t < 3; ++t) place.binds.push_back(PlanBind{JobId(job), t, "n1", {t}, 1000, 1024});
  ASSERT_EQ(Do(place).binds_applied, 3u);
  const uint64_t waiting = Submit(QueueJob("default", 1, 2));
  ApplyPlanCmd one;
  one.evictions = {PlanEviction{JobId(job), 2, JobId(waiting), "reclaimed"}};
  ASSERT_TRUE(Do(one).status.ok());
  EXPECT_FALSE(Task(job, 0).stop_requested);  // 2 of min 2 stay
  ApplyPlanCmd another;
  another.evictions = {PlanEviction{JobId(job), 1, JobId(waiting), "reclaimed"}};
  ASSERT_TRUE(Do(another).status.ok());
  EXPECT_TRUE(Task(job, 0).stop_requested);  // 1 would stay: the gang goes whole
}

TEST_F(PolicyStateTest, ApplyRefusesBindsThatBreakAGroupMinimum) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 4), {}}).status.ok());
  const uint64_t job = Submit(QueueJob("default", 4, 1, 3));
  ApplyPlanCmd two;
  two.binds = {PlanBind{JobId(job), 0, "n1", {0}, 1000, 1024}, PlanBind{JobId(job), 1, "n1", {1}, 1000, 1024}};
  EXPECT_EQ(Do(two).jobs_rejected, 1u);
  ApplyPlanCmd three = two;
  three.binds.push_back(PlanBind{JobId(job), 2, "n1", {2}, 1000, 1024});
  EXPECT_EQ(Do(three).binds_applied, 3u);
  // Running now: the elastic fourth replica may join alone.
  ApplyPlanCmd grow;
  grow.binds = {PlanBind{JobId(job), 3, "n1", {3}, 1000, 1024}};
  EXPECT_EQ(Do(grow).binds_applied, 1u);
}

TEST_F(PolicyStateTest, ElasticJobSucceedsWithoutReplicasThatNeverGotCapacity) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 1), {}}).status.ok());
  const uint64_t job = Submit(QueueJob("default", 3, 1, 1));
  ASSERT_EQ(Do(ApplyPlanCmd{{PlanBind{JobId(job), 0, "n1", {0}, 1000, 1024}}, {}, {}}).binds_applied, 1u);
  EXPECT_EQ(state_.pending_jobs().count(job), 1u);  // still schedulable: it may grow
  ASSERT_TRUE(Exit(job, 0, 0, "n1", 0).status.ok());
  EXPECT_EQ(state_.FindJob(JobId(job))->state, JobState::kSucceeded);
  EXPECT_EQ(Task(job, 1).state, TaskState::kCancelled);
  EXPECT_EQ(state_.pending_jobs().count(job), 0u);
}

TEST_F(PolicyStateTest, ViewCarriesQueuesRunningTasksAndGangRules) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 4), {}}).status.ok());
  ASSERT_TRUE(QueueOp("create", Queue("team", "root", {{"gpu", 3}})).status.ok());
  const uint64_t job = Submit(QueueJob("team", 3, 1, 2, "low"));
  ApplyPlanCmd place;
  place.binds = {PlanBind{JobId(job), 0, "n1", {0}, 1000, 1024}, PlanBind{JobId(job), 1, "n1", {1}, 1000, 1024}};
  ASSERT_EQ(Do(place).binds_applied, 2u);
  auto view = state_.BuildView(index_ * 1000);
  EXPECT_EQ(view.queues.size(), 3u);
  ASSERT_EQ(view.running.size(), 2u);
  EXPECT_EQ(view.running[0].queue, "team");
  EXPECT_EQ(view.running[0].priority_class, topology::PriorityClass::kLow);
  EXPECT_EQ(view.running[0].group_min, 2u);
  EXPECT_EQ(view.running[0].group_active, 2u);
  EXPECT_EQ(view.running[0].gpu_model, "A100");
  ASSERT_EQ(view.pending.size(), 1u);
  EXPECT_EQ(view.pending[0].groups[0].active, 2u);
  EXPECT_EQ(view.pending[0].tasks.size(), 1u);
  auto allocated = state_.QueueAllocations();
  EXPECT_EQ(allocated["team"]["gpu"], 2u);
  EXPECT_EQ(allocated["team"]["gpu/A100"], 2u);
  EXPECT_EQ(allocated["root"]["gpu"], 2u);
}

// The spec file's pool applies on first registration and when the file
// changes it; an operator's move holds across re-registrations until then.
TEST_F(PolicyStateTest, TheSpecFilesPoolAppliesUntilAnOperatorMovesTheNode) {
  NodeSpec spec = MakeNode("n1", 1);
  spec.pool = "exclusive";
  spec.pool_queue = "default";
  ASSERT_TRUE(Do(RegisterNodeCmd{spec, {}}).status.ok());
  EXPECT_EQ(state_.FindNode("n1")->pool, "exclusive");
  EXPECT_EQ(state_.BuildView().nodes[0].pool_queue, "default");
  UpdateNode move{.node = "n1", .op = NodeUpdateOp::kPool, .pool = "pooled"};
  ASSERT_TRUE(Do(UpdateNodeCmd{move}).status.ok());
  ASSERT_TRUE(Do(RegisterNodeCmd{spec, {}}).status.ok());
  EXPECT_EQ(state_.FindNode("n1")->pool, "pooled") << "a restarted worker undid the operator's move";
  EXPECT_EQ(state_.FindNode("n1")->pool_queue, "");
  spec.pool = "public";
  spec.pool_queue.clear();
  ASSERT_TRUE(Do(RegisterNodeCmd{spec, {}}).status.ok());
  EXPECT_EQ(state_.FindNode("n1")->pool, "public") << "the spec file's new pool applies";
}

TEST_F(PolicyStateTest, TaintsAreSetAndRemoved) {
  ASSERT_TRUE(Do(RegisterNodeCmd{MakeNode("n1", 1), {}}).status.ok());
  UpdateNode taint{.node = "n1", .op = NodeUpdateOp::kTaint, .taints = {{"maintenance", "true"}}};
  ASSERT_TRUE(Do(UpdateNodeCmd{taint}).status.ok());
  EXPECT_EQ(state_.BuildView().nodes[0].taints.at("maintenance"), "true");
  UpdateNode untaint{.node = "n1", .op = NodeUpdateOp::kTaint, .remove_taints = {"maintenance"}};
  ASSERT_TRUE(Do(UpdateNodeCmd{untaint}).status.ok());
  EXPECT_TRUE(state_.BuildView().nodes[0].taints.empty());
}

}  // namespace
}  // namespace gpool::state
