// Exclusive whole cores in the state machine: a plan's CPU ids are checked
// against what the node's tasks hold (and against the plan's own earlier
// binds) before they commit, the scheduler's view leaves held ids out, they
// come back when the task ends, and a snapshot keeps them.
#include <algorithm>

#include "control/state/cluster_state_fixture.h"
#include "topology/test_nodes.h"

namespace gpool::state {
namespace {

using Ids = std::vector<uint32_t>;

class ExclusiveCpusStateTest : public ClusterStateTest {
 protected:
  void SetUp() override {
    NodeSpec node = topology::testing::MakeGpuNode(2);
    node.numa = {NumaInfo{0, 4000, 4096, "0-3"}, NumaInfo{1, 4000, 4096, "4-7"}};
    ASSERT_TRUE(Do(RegisterNodeCmd{node, {}}).status.ok());
  }
  uint64_t SubmitExclusive(const std::string& name, uint32_t replicas, uint64_t cpus) {
    JobSpec spec = MakeJob(name, replicas, 0);
    spec.tasks[0].resources.cpu_milli = cpus * 1000;
    spec.tasks[0].resources.exclusive_cores = true;
    ApplyResult r = Do(SubmitJobCmd{spec, ""});
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    return r.job_id;
  }
  PlanBind CoresBind(uint64_t job, uint32_t task, Ids ids) {
    PlanBind bind = Bind(job, task, "n1", {});
    bind.cpu_milli = 1000 * ids.size();
    bind.cpu_ids = std::move(ids);
    return bind;
  }
  std::vector<Ids> FreeIds() const {
    const topology::ClusterView view = state_.BuildView(0);  // outlives the loop below
    std::vector<Ids> free;
    for (const auto& slot : view.nodes.at(0).numa) free.push_back(slot.cpu_ids_free);
    return free;
  }
};

TEST_F(ExclusiveCpusStateTest, HeldIdsLeaveTheViewAndComeBackWhenTheTaskEnds) {
  EXPECT_EQ(FreeIds(), (std::vector<Ids>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  const uint64_t job = SubmitExclusive("pinned", 1, 2);
  ASSERT_EQ(Do(ApplyPlanCmd{{CoresBind(job, 0, {1, 2})}, {}}).binds_applied, 1u);
  EXPECT_EQ(state_.FindJob(JobId(job))->tasks[0].cpu_ids(), (Ids{1, 2}));
  EXPECT_EQ(FreeIds(), (std::vector<Ids>{{0, 3}, {4, 5, 6, 7}}));
  ASSERT_TRUE(Event(job, 0, "n1", "started").status.ok());
  ASSERT_TRUE(Event(job, 0, "n1", "exited").status.ok());
  EXPECT_EQ(FreeIds(), (std::vector<Ids>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST_F(ExclusiveCpusStateTest, AnIdHeldOrTakenTwiceInOnePlanIsRefusedWhole) {
  const uint64_t a = SubmitExclusive("a", 1, 2);
  const uint64_t b = SubmitExclusive("b", 2, 1);
  ASSERT_EQ(Do(ApplyPlanCmd{{CoresBind(a, 0, {4, 5})}, {}}).binds_applied, 1u);
  ApplyResult held = Do(ApplyPlanCmd{{CoresBind(b, 0, {0}), CoresBind(b, 1, {5})}, {}});
  EXPECT_EQ(held.binds_applied, 0u) << "5 is a's";
  EXPECT_EQ(held.jobs_rejected, 1u);
  ApplyResult twice = Do(ApplyPlanCmd{{CoresBind(b, 0, {0}), CoresBind(b, 1, {0})}, {}});
  EXPECT_EQ(twice.binds_applied, 0u) << "one id for two tasks of one plan";
  EXPECT_EQ(state_.FindJob(JobId(b))->state, JobState::kPending);
  EXPECT_EQ(FreeIds(), (std::vector<Ids>{{0, 1, 2, 3}, {6, 7}})) << "a refused plan changes nothing";
}

TEST_F(ExclusiveCpusStateTest, IdsMustBeTheNodesAndAsManyAsAsked) {
  const uint64_t job = SubmitExclusive("pinned", 1, 2);
  EXPECT_EQ(Do(ApplyPlanCmd{{CoresBind(job, 0, {7, 8})}, {}}).binds_applied, 0u) << "8 is not n1's";
  PlanBind short_bind = CoresBind(job, 0, {7});
  short_bind.cpu_milli = 2000;
  EXPECT_EQ(Do(ApplyPlanCmd{{short_bind}, {}}).binds_applied, 0u) << "2 cores asked, 1 given";
  const uint64_t plain = Submit("plain", 1, 0);
  PlanBind given = Bind(plain, 0, "n1", {});
  given.cpu_ids = {3};
  EXPECT_EQ(Do(ApplyPlanCmd{{given}, {}}).binds_applied, 0u) << "a task that asked for none gets none";
}

TEST_F(ExclusiveCpusStateTest, ASnapshotKeepsTheHeldIds) {
  const uint64_t job = SubmitExclusive("pinned", 1, 3);
  ASSERT_EQ(Do(ApplyPlanCmd{{CoresBind(job, 0, {0, 1, 4})}, {}}).binds_applied, 1u);
  ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  EXPECT_EQ(restored.FindJob(JobId(job))->tasks[0].cpu_ids(), (Ids{0, 1, 4}));
  const topology::ClusterView view = restored.BuildView(0);
  std::vector<Ids> free;
  for (const auto& slot : view.nodes.at(0).numa) free.push_back(slot.cpu_ids_free);
  EXPECT_EQ(free, (std::vector<Ids>{{2, 3}, {5, 6, 7}}));
}

}  // namespace
}  // namespace gpool::state
