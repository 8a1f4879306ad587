#include "control/training_env.h"
#include "protocol/messages_worker.h"

#include <gtest/gtest.h>

namespace gpool::control {
namespace {

using state::ApplyPlanCmd;
using state::ClusterState;
using state::Command;
using state::PlanBind;

NodeSpec HostNode(const std::string& name, const std::string& hostname) {
  NodeSpec node;
  node.name = name;
  node.hostname = hostname;
  node.cpu_milli = 64'000;
  node.memory_mib = 1 << 20;
  for (uint32_t i = 0; i < 8; ++i) node.gpus.push_back(GpuInfo{.index = i, .uuid = name + "-" + std::to_string(i)});
  return node;
}

class TrainingEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Do(state::RegisterNodeCmd{HostNode("n1", "host-a.example"), {}});
    Do(state::RegisterNodeCmd{HostNode("n2", ""), {}});
    JobSpec spec;
    spec.name = "train";
    TaskGroupSpec group;
    group.replicas = 4;
    group.command = {"python3", "train.py"};
    group.resources = Resources{2, 1000, 1024};
    spec.tasks.push_back(group);
    job_ = state_.Apply(++index_, Command{1, state::SubmitJobCmd{spec, ""}}).job_id;
  }

  state::ApplyResult Do(state::CommandBody body) { return state_.Apply(++index_, Command{1, std::move(body)}); }
  const state::JobRecord& Job() { return *state_.FindJob(JobId(job_)); }
  std::map<std::string, std::string> EnvOf(uint32_t index) { return TrainingEnv(state_, Job(), Job().tasks[index]); }

  ClusterState state_;
  uint64_t index_ = 0;
  uint64_t job_ = 0;
};

TEST_F(TrainingEnvTest, GangLayoutGivesRanksNodesAndMaster) {
  // Tasks 0, 2 and 3 on n2, task 1 on n1: n2 is node rank 0 (it holds task 0).
  ApplyPlanCmd plan;
  plan.binds = {PlanBind{JobId(job_), 0, "n2", {0, 1}, 1000, 1024}, PlanBind{JobId(job_), 1, "n1", {0, 1}, 1000, 1024},
                PlanBind{JobId(job_), 2, "n2", {2, 3}, 1000, 1024}, PlanBind{JobId(job_), 3, "n2", {4, 5}, 1000, 1024}};
  ASSERT_EQ(Do(plan).binds_applied, 4u);

  auto t0 = EnvOf(0);
  EXPECT_EQ(t0.at("RANK"), "0");
  EXPECT_EQ(t0.at("WORLD_SIZE"), "4");
  EXPECT_EQ(t0.at("LOCAL_RANK"), "0");
  EXPECT_EQ(t0.at("LOCAL_WORLD_SIZE"), "3");
  EXPECT_EQ(t0.at("NODE_RANK"), "0");
  EXPECT_EQ(t0.at("NNODES"), "2");
  EXPECT_EQ(t0.at("MASTER_ADDR"), "n2") << "a node without a hostname is addressed by its name";
  EXPECT_EQ(t0.at("MASTER_PORT"), std::to_string(29500 + job_ % 10000));
  EXPECT_EQ(t0.at("GPOOL_HOSTS"), "n2:3,host-a.example:1");
  // The bind carries the same list structured, for the worker's MPI hostfile.
  const std::vector<HostSlots> hosts = TrainingLayout(state_, Job(), Job().tasks[0]).HostsFor(Job().tasks[0]);
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].host, "n2");
  EXPECT_EQ(hosts[0].slots, 3u);
  EXPECT_EQ(hosts[1].host, "host-a.example");
  EXPECT_EQ(hosts[1].slots, 1u);

  auto t1 = EnvOf(1);
  EXPECT_EQ(t1.at("RANK"), "1");
  EXPECT_EQ(t1.at("LOCAL_RANK"), "0");
  EXPECT_EQ(t1.at("LOCAL_WORLD_SIZE"), "1");
  EXPECT_EQ(t1.at("NODE_RANK"), "1");
  EXPECT_EQ(t1.at("MASTER_ADDR"), "n2") << "every task agrees on the master";

  auto t3 = EnvOf(3);
  EXPECT_EQ(t3.at("LOCAL_RANK"), "2");
  EXPECT_EQ(t3.at("NODE_RANK"), "0");
  EXPECT_EQ(t3.at("GPOOL_TASK_NAME"), "train-task-3");
  EXPECT_EQ(t3.at("GPOOL_TASK_HOSTS"), "n2,host-a.example,n2,n2");
}

// A cluster of one node "n1" (host "h1") and an elastic job: `groups` first
// (a ps, say), then 4 workers of 1 GPU each that may run with 1.
class TrainingEnvElasticTest : public ::testing::Test {
 protected:
  state::ApplyResult Apply(state::CommandBody body) { return state_.Apply(++index_, Command{1, std::move(body)}); }
  uint64_t Submit(std::vector<TaskGroupSpec> groups) {
    Apply(state::RegisterNodeCmd{HostNode("n1", "h1"), {}});
    JobSpec spec;
    spec.name = "job";
    TaskGroupSpec worker;
    worker.name = "worker";
    worker.replicas = 4;
    worker.min_replicas = 1;
    worker.command = {"w"};
    worker.resources.gpus = 1;
    groups.push_back(worker);
    spec.tasks = std::move(groups);
    return Apply(state::SubmitJobCmd{spec, ""}).job_id;
  }
  ClusterState state_;
  uint64_t index_ = 0;
};

TEST_F(TrainingEnvElasticTest, ElasticJobRanksTheReplicasItHasAndNamesGroupsStably) {
  TaskGroupSpec ps;
  ps.name = "ps";
  ps.command = {"ps"};
  const uint64_t job = Submit({ps});
  ApplyPlanCmd plan;
  plan.binds = {PlanBind{JobId(job), 0, "n1", {}, 0, 0}, PlanBind{JobId(job), 2, "n1", {0}, 0, 0}};
  ASSERT_EQ(Apply(plan).binds_applied, 2u);
  const auto& record = *state_.FindJob(JobId(job));
  auto env = TrainingEnv(state_, record, record.tasks[2]);
  EXPECT_EQ(env.at("RANK"), "1");
  EXPECT_EQ(env.at("WORLD_SIZE"), "2");
  EXPECT_EQ(env.at("GPOOL_TASK_NAME"), "job-worker-1");
  EXPECT_EQ(env.at("GPOOL_PS_HOSTS"), "h1");
  EXPECT_EQ(env.at("GPOOL_WORKER_HOSTS"), "h1");
  EXPECT_EQ(env.at("MASTER_ADDR"), "h1");
}

// The dispatcher builds one layout per job and reads every task's
// environment from it: that must be what each task would get on its own.
TEST_F(TrainingEnvTest, OneLayoutServesEveryTaskOfAGang) {
  ApplyPlanCmd plan;
  plan.binds = {PlanBind{JobId(job_), 0, "n2", {0, 1}, 1000, 1024}, PlanBind{JobId(job_), 1, "n1", {0, 1}, 1000, 1024},
                PlanBind{JobId(job_), 2, "n2", {2, 3}, 1000, 1024}, PlanBind{JobId(job_), 3, "n1", {4, 5}, 1000, 1024}};
  ASSERT_EQ(Do(plan).binds_applied, 4u);
  const TrainingLayout layout(state_, Job(), Job().tasks[2]);
  for (uint32_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(layout.Covers(Job().tasks[i]));
    EXPECT_EQ(layout.EnvFor(Job().tasks[i]), EnvOf(i)) << "task " << i;
  }
}

TEST_F(TrainingEnvElasticTest, ALayoutCoversOnlyTheReplicasItCounts) {
  const uint64_t job = Submit({});
  ApplyPlanCmd plan;
  plan.binds = {PlanBind{JobId(job), 1, "n1", {0}, 0, 0}, PlanBind{JobId(job), 3, "n1", {1}, 0, 0}};
  ASSERT_EQ(Apply(plan).binds_applied, 2u);
  const auto& record = *state_.FindJob(JobId(job));
  const TrainingLayout layout(state_, record, record.tasks[1]);
  EXPECT_TRUE(layout.Covers(record.tasks[3]));
  EXPECT_FALSE(layout.Covers(record.tasks[0])) << "a waiting replica is laid out with itself counted";
  EXPECT_EQ(layout.EnvFor(record.tasks[3]), TrainingEnv(state_, record, record.tasks[3]));
  EXPECT_EQ(TrainingEnv(state_, record, record.tasks[0]).at("WORLD_SIZE"), "3");
}

TEST_F(TrainingEnvTest, UnplacedGangMatesLeaveOnlyRankAndWorldSize) {
  auto env = EnvOf(2);
  EXPECT_EQ(env.at("RANK"), "2");
  EXPECT_EQ(env.at("WORLD_SIZE"), "4");
  EXPECT_EQ(env.count("MASTER_ADDR"), 0u);
  EXPECT_EQ(env.count("LOCAL_RANK"), 0u);
  EXPECT_EQ(env.at("GPOOL_TASK_NAME"), "train-task-2");
  EXPECT_TRUE(TrainingLayout(state_, Job(), Job().tasks[2]).HostsFor(Job().tasks[2]).empty());
}

}  // namespace
}  // namespace gpool::control

namespace gpool::control {
namespace {

TEST_F(TrainingEnvTest, TaskHostsNameEveryTaskWithItsNodesHostAndOneSlot) {
  EXPECT_TRUE(TrainingLayout(state_, Job(), Job().tasks[0]).TaskHostsFor(Job().tasks[0]).empty())
      << "not placed yet: no names to resolve";
  ApplyPlanCmd plan;
  plan.binds = {PlanBind{JobId(job_), 0, "n2", {0, 1}, 1000, 1024}, PlanBind{JobId(job_), 1, "n1", {0, 1}, 1000, 1024},
                PlanBind{JobId(job_), 2, "n2", {2, 3}, 1000, 1024}, PlanBind{JobId(job_), 3, "n2", {4, 5}, 1000, 1024}};
  ASSERT_EQ(Do(plan).binds_applied, 4u);
  const TrainingLayout layout(state_, Job(), Job().tasks[2]);
  EXPECT_EQ(layout.TaskHostsFor(Job().tasks[2]),
            (std::vector<TaskHost>{{"train-task-0", "n2", 1},
                                   {"train-task-1", "host-a.example", 1},
                                   {"train-task-2", "n2", 1},
                                   {"train-task-3", "n2", 1}}));
  EXPECT_EQ(layout.TaskName(Job().tasks[3]), "train-task-3");
  EXPECT_EQ(EnvOf(3).at("GPOOL_TASK_NAME"), "train-task-3");
}

// A node that advertises its address (NodeSpec.address) has it sent with
// its tasks' names, so no worker looks its hostname up.
TEST_F(TrainingEnvTest, TaskHostsCarryTheAddressTheirNodeAdvertised) {
  NodeSpec n1 = HostNode("n1", "host-a.example");
  n1.address = "10.0.0.11";
  Do(state::RegisterNodeCmd{n1, {}});
  ApplyPlanCmd plan;
  plan.binds = {PlanBind{JobId(job_), 0, "n1", {0, 1}, 1000, 1024}, PlanBind{JobId(job_), 1, "n2", {0, 1}, 1000, 1024},
                PlanBind{JobId(job_), 2, "n1", {2, 3}, 1000, 1024}, PlanBind{JobId(job_), 3, "n2", {2, 3}, 1000, 1024}};
  ASSERT_EQ(Do(plan).binds_applied, 4u);
  const TrainingLayout layout(state_, Job(), Job().tasks[0]);
  EXPECT_EQ(layout.TaskHostsFor(Job().tasks[0]),
            (std::vector<TaskHost>{{"train-task-0", "host-a.example", 1, "10.0.0.11"},
                                   {"train-task-1", "n2", 1, ""},
                                   {"train-task-2", "host-a.example", 1, "10.0.0.11"},
                                   {"train-task-3", "n2", 1, ""}}));
}

}  // namespace
}  // namespace gpool::control
