// MigInstanceStep: dynamic instances are made before the launch and their
// uuids given to the environment; a failure destroys those made before it;
// undo and release destroy them once, and a failed destroy is only logged.
#include "worker/runner/setup/mig_instance_step.h"

#include <gtest/gtest.h>

#include "protocol/messages_worker.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

class ScriptedMig final : public MigManager {
 public:
  Result<std::string> Create(uint32_t gpu, const std::string& profile, uint32_t start) override {
    created.push_back(std::to_string(gpu) + "/" + profile + "@" + std::to_string(start));
    if (fail_on_gpu == static_cast<int>(gpu)) return Status::Unavailable("no room on gpu " + std::to_string(gpu));
    return "MIG-" + std::to_string(gpu);
  }
  Status Destroy(uint32_t gpu, const std::string& profile, uint32_t start) override {
    destroyed.push_back(std::to_string(gpu) + "/" + profile + "@" + std::to_string(start));
    return fail_destroy;
  }
  int fail_on_gpu = -1;
  Status fail_destroy;
  std::vector<std::string> created;
  std::vector<std::string> destroyed;
};

class MigInstanceStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bind_.task = TaskId{JobId(2), 0, 0};
    bind_.gpu_indices = {0, 1};
    bind_.mig_profiles = {"1g.10gb", "2g.20gb"};
    bind_.mig_starts = {3, 4};
  }
  NodeSpec node_ = testing::TaskManagerNode(2, "dynamic");
  ScriptedMig mig_;
  testing::CapturedLog log_;
  BindTask bind_;
  TaskSetupRecord record_;
};

TEST_F(MigInstanceStepTest, MakesTheInstancesAndUndoDestroysThemOnce) {
  MigInstanceStep step(node_, &mig_, log_.logger());
  TaskSetupContext ctx(bind_.task, bind_, record_);
  ASSERT_TRUE(step.Prepare(ctx).ok());
  EXPECT_EQ(mig_.created, (std::vector<std::string>{"0/1g.10gb@3", "1/2g.20gb@4"}));
  EXPECT_EQ(ctx.env.mig_uuids, (std::map<uint32_t, std::string>{{0, "MIG-0"}, {1, "MIG-1"}}));
  EXPECT_EQ(record_.mig_created.size(), 2u);
  step.Undo(ctx);
  step.Release(ctx);  // nothing left to destroy
  EXPECT_EQ(mig_.destroyed, (std::vector<std::string>{"0/1g.10gb@3", "1/2g.20gb@4"}));
  EXPECT_TRUE(record_.mig_created.empty());
  EXPECT_TRUE(log_.Contains("mig instance destroyed task=2.0 gpu=1"));
}

TEST_F(MigInstanceStepTest, AFailureDestroysWhatWasMadeBeforeIt) {
  mig_.fail_on_gpu = 1;
  MigInstanceStep step(node_, &mig_, log_.logger());
  TaskSetupContext ctx(bind_.task, bind_, record_);
  Status failed = step.Prepare(ctx);
  EXPECT_EQ(failed.code(), StatusCode::kUnavailable);
  EXPECT_EQ(mig_.destroyed, std::vector<std::string>{"0/1g.10gb@3"});
  EXPECT_TRUE(record_.mig_created.empty());
}

TEST_F(MigInstanceStepTest, AFailedDestroyIsLoggedNotRetried) {
  mig_.fail_destroy = Status::Internal("busy");
  MigInstanceStep step(node_, &mig_, log_.logger());
  TaskSetupContext ctx(bind_.task, bind_, record_);
  ASSERT_TRUE(step.Prepare(ctx).ok());
  step.Release(ctx);
  step.Release(ctx);
  EXPECT_EQ(mig_.destroyed.size(), 2u);
  EXPECT_TRUE(log_.Contains("mig instance not destroyed; it keeps its placement until removed task=2.0 "));
}

TEST_F(MigInstanceStepTest, OnlyDynamicGpusWithAManagerGetInstances) {
  MigInstanceStep without(node_, nullptr, log_.logger());
  TaskSetupContext ctx(bind_.task, bind_, record_);
  ASSERT_TRUE(without.Prepare(ctx).ok());
  EXPECT_TRUE(ctx.env.mig_uuids.empty());
  EXPECT_TRUE(without.DynamicInstances(bind_).empty());

  MigInstanceStep static_mig(testing::TaskManagerNode(2, "static"), &mig_, log_.logger());
  EXPECT_TRUE(static_mig.DynamicInstances(bind_).empty());
  ASSERT_TRUE(static_mig.Prepare(ctx).ok());
  EXPECT_TRUE(mig_.created.empty());

  // What an adopted task is given to destroy when it ends.
  MigInstanceStep step(node_, &mig_, log_.logger());
  const auto adopted = step.DynamicInstances(bind_);
  ASSERT_EQ(adopted.size(), 2u);
  EXPECT_EQ(adopted[1].gpu_index, 1u);
  EXPECT_EQ(adopted[1].profile, "2g.20gb");
  EXPECT_EQ(adopted[1].start, 4u);
}

}  // namespace
}  // namespace gpool::worker
