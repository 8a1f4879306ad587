// Time-sliced replicas in the state machine: a plan's replica binds are
// re-checked (low class only, a time-sliced GPU, a free replica, the plan's
// earlier binds counted), whole binds and shares never land on such a GPU,
// the view counts the replicas held, and their usage is their turn (1/N).
#include "control/state/cluster_state_fixture.h"
#include "topology/test_nodes.h"

namespace gpool::state {
namespace {

class TimeSlicesStateTest : public ClusterStateTest {
 protected:
  void SetUp() override {
    NodeSpec node = topology::testing::MakeGpuNode(2);
    node.gpus[0].time_slices = 2;  // GPU 1 is an ordinary one
    ASSERT_TRUE(Do(RegisterNodeCmd{node, {}}).status.ok());
  }
  uint64_t SubmitClass(const std::string& name, uint32_t replicas, const std::string& cls) {
    JobSpec spec = MakeJob(name, replicas, 1);
    spec.priority_class = cls;
    ApplyResult r = Do(SubmitJobCmd{spec, ""});
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    return r.job_id;
  }
  PlanBind Replica(uint64_t job, uint32_t task) {
    PlanBind bind = Bind(job, task, "n1", {0});
    bind.grant.time_slice = true;
    return bind;
  }
  uint32_t HeldReplicas() const { return state_.BuildView(0).nodes.at(0).gpus.at(0).tenants; }
};

TEST_F(TimeSlicesStateTest, LowTasksTakeTheReplicasAndNoMore) {
  const uint64_t a = SubmitClass("a", 2, "low");
  const uint64_t b = SubmitClass("b", 1, "low");
  ASSERT_EQ(Do(ApplyPlanCmd{{Replica(a, 0), Replica(a, 1)}, {}}).binds_applied, 2u);
  EXPECT_EQ(HeldReplicas(), 2u);
  EXPECT_EQ(state_.BuildView(0).nodes.at(0).gpus.at(0).time_slices, 2u);
  EXPECT_EQ(Do(ApplyPlanCmd{{Replica(b, 0)}, {}}).binds_applied, 0u) << "both replicas are held";
  ASSERT_TRUE(Event(a, 0, "n1", "started").status.ok());
  ASSERT_TRUE(Event(a, 0, "n1", "exited").status.ok());
  EXPECT_EQ(HeldReplicas(), 1u);
  EXPECT_EQ(Do(ApplyPlanCmd{{Replica(b, 0)}, {}}).binds_applied, 1u) << "one came free";
}

TEST_F(TimeSlicesStateTest, TwoReplicaBindsOfOnePlanCountAgainstEachOther) {
  const uint64_t a = SubmitClass("a", 3, "low");
  EXPECT_EQ(Do(ApplyPlanCmd{{Replica(a, 0), Replica(a, 1), Replica(a, 2)}, {}}).binds_applied, 0u);
  EXPECT_EQ(HeldReplicas(), 0u) << "refused whole";
}

TEST_F(TimeSlicesStateTest, OtherClassesAndOtherKindsOfBindNeverLandOnAReplica) {
  const uint64_t medium = SubmitClass("m", 1, "medium");
  EXPECT_EQ(Do(ApplyPlanCmd{{Replica(medium, 0)}, {}}).binds_applied, 0u) << "replicas are for low work";
  EXPECT_EQ(Do(ApplyPlanCmd{{Bind(medium, 0, "n1", {0})}, {}}).binds_applied, 0u) << "not whole, either";
  EXPECT_EQ(Do(ApplyPlanCmd{{Bind(medium, 0, "n1", {1})}, {}}).binds_applied, 1u) << "the ordinary GPU";
  const uint64_t low = SubmitClass("l", 1, "low");
  PlanBind on_plain = Bind(low, 0, "n1", {1});
  on_plain.grant.time_slice = true;
  EXPECT_EQ(Do(ApplyPlanCmd{{on_plain}, {}}).binds_applied, 0u) << "GPU 1 is not time-sliced";
  PlanBind with_share = Replica(low, 0);
  with_share.grant.gpu_memory_mib = 1024;
  EXPECT_EQ(Do(ApplyPlanCmd{{with_share}, {}}).binds_applied, 0u) << "a replica is no share";
}

TEST_F(TimeSlicesStateTest, AReplicaIsChargedItsTurnOfTheDevice) {
  const uint64_t job = SubmitClass("a", 1, "low");
  ASSERT_EQ(Do(ApplyPlanCmd{{Replica(job, 0)}, {}}).binds_applied, 1u);
  ASSERT_TRUE(Event(job, 0, "n1", "started").status.ok());
  ASSERT_TRUE(Event(job, 0, "n1", "exited").status.ok());
  ASSERT_EQ(state_.usage_ledger().records().size(), 1u);
  EXPECT_EQ(state_.usage_ledger().records().front().gpu_milli, 500u) << "one of two replicas: half the device";
}

}  // namespace
}  // namespace gpool::state
