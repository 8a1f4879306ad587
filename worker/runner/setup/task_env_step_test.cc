// TaskEnvStep: the bind's command and the environment built from the job's
// env, the worker's and the devices, with the MIG uuids the MIG step found;
// a MIG instance the node does not have fails the start.
#include "worker/runner/setup/task_env_step.h"

#include <gtest/gtest.h>

#include "protocol/messages_worker.h"
#include "worker/runner/task_manager_test_util.h"

namespace gpool::worker {
namespace {

TEST(TaskEnvStepTest, CommandAndEnvironmentWithTheStepsBeforeIt) {
  TaskEnvStep step(testing::TaskManagerNode(2, "dynamic"), {{"PATH", "/usr/bin"}});
  BindTask bind = testing::OneGpuBind(8);
  bind.env = {{"SEED", "1"}};
  bind.mig_profiles = {"1g.10gb"};
  TaskSetupRecord record;
  TaskSetupContext ctx(bind.task, bind, record);
  ctx.env.mig_uuids = {{1, "MIG-made-for-8"}};
  ASSERT_TRUE(step.Prepare(ctx).ok());
  EXPECT_EQ(ctx.request.argv, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_TRUE(testing::HasEnv(ctx.request, "PATH=/usr/bin"));
  EXPECT_TRUE(testing::HasEnv(ctx.request, "SEED=1"));
  EXPECT_TRUE(testing::HasEnv(ctx.request, "GPOOL_JOB_ID=8"));
  EXPECT_TRUE(testing::HasEnv(ctx.request, "CUDA_VISIBLE_DEVICES=MIG-made-for-8"));
  step.Undo(ctx);  // nothing to undo
}

TEST(TaskEnvStepTest, AStaticMigInstanceTheNodeLacksFailsTheStart) {
  TaskEnvStep step(testing::TaskManagerNode(2, "static"), {});
  BindTask bind = testing::OneGpuBind(9);
  bind.mig_profiles = {"3g.40gb"};
  TaskSetupRecord record;
  TaskSetupContext ctx(bind.task, bind, record);
  Status failed = step.Prepare(ctx);
  EXPECT_EQ(failed.code(), StatusCode::kFailedPrecondition) << failed.ToString();
  EXPECT_TRUE(ctx.request.env.empty());
}

}  // namespace
}  // namespace gpool::worker
