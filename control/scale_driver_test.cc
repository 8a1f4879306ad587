// ScaleDriver over the fake ports: a rule's change is proposed at the check,
// and while the replicas run a state version that would refuse it
// (Proposer::Admissible) nothing is proposed until they no longer do.
#include "control/scale_driver.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "control/state/test_specs.h"
#include "control/testing/fake_ports.h"
#include "protocol/base/testing/fake_clock.h"

namespace gpool::control {
namespace {

// Node n1 of 4 GPUs; job "elastic" (4 replicas, minimum 1) grows one step
// while more than 2 other jobs wait in its queue; three 8-GPU jobs wait.
class ScaleDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    proposer_.Propose(state::RegisterNodeCmd{state::testing::MakeNode("n1", 4), {}, {}, ""},
                      [](const state::ApplyResult&) {});
    TaskGroupSpec elastic{.command = {"train"}, .resources = Resources{1, 100, 64}};
    elastic.replicas = 4;
    elastic.min_replicas = 1;
    elastic.scale.rules = {ScaleRule{.trigger = "queue-depth", .grow_above = 2}};
    elastic_ = Submit("elastic", elastic);
    for (int i = 0; i < 3; ++i) Submit("big", TaskGroupSpec{.command = {"true"}, .resources = Resources{8, 100, 64}});
    proposer_.clear();
  }
  uint64_t Submit(const std::string& name, TaskGroupSpec group) {
    JobSpec spec;
    spec.name = name;
    spec.tasks.push_back(std::move(group));
    uint64_t id = 0;
    proposer_.Propose(state::SubmitJobCmd{spec, ""}, [&](const state::ApplyResult& r) {
      EXPECT_TRUE(r.status.ok()) << r.status.ToString();
      id = r.job_id;
    });
    return id;
  }
  size_t ScaleProposals() const {
    const auto& proposed = proposer_.proposed();
    return static_cast<size_t>(std::count(proposed.begin(), proposed.end(), "ScaleJob"));
  }
  uint32_t Target() const { return state_.FindJob(JobId(elastic_))->ReplicaTarget(0); }

  state::ClusterState state_;
  ImmediateProposer proposer_{state_};
  FakeClock clock_{1'000'000};
  WorkerTable workers_;
  uint64_t elastic_ = 0;
};

TEST_F(ScaleDriverTest, AChangeIsProposedAtTheCheck) {
  ScaleDriver driver(ScaleDriverOptions{}, state_, workers_, proposer_, &clock_);
  ASSERT_EQ(Target(), 1u);
  driver.Tick(clock_.MonoMs());
  EXPECT_EQ(ScaleProposals(), 1u);
  EXPECT_EQ(Target(), 2u);
}

TEST_F(ScaleDriverTest, NothingIsProposedWhileTheReplicasWouldRefuseItAndScalingResumesAfter) {
  ScaleDriver driver(ScaleDriverOptions{}, state_, workers_, proposer_, &clock_);
  proposer_.set_admissible(Status::FailedPrecondition("a scale rule's decision needs every replica at state "
                                                      "version 3 or later, and replica 2 runs version 2"));
  for (int check = 0; check < 5; ++check) {
    driver.Tick(clock_.MonoMs());
    clock_.Advance(ScaleDriverOptions{}.check_every_ms);
  }
  EXPECT_EQ(ScaleProposals(), 0u) << "held, not proposed and refused every check";
  EXPECT_EQ(Target(), 1u);

  proposer_.set_admissible(Status::Ok());  // the upgrade finished
  driver.Tick(clock_.MonoMs());
  EXPECT_EQ(ScaleProposals(), 1u);
  EXPECT_EQ(Target(), 2u);
}

}  // namespace
}  // namespace gpool::control
