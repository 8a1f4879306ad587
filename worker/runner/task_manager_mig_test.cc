// TaskManager with dynamic MIG: instances made before the launch, destroyed
// after the task ends (task_manager.h).
#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "worker/runner/mig_manager.h"
#include "worker/runner/simulated_mig_manager.h"
#include "worker/runner/task_manager.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/runner/testing/fake_process_launcher.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

using testing::HasEnv;

class FakeMigManager final : public MigManager {
 public:
  Result<std::string> Create(uint32_t gpu_index, const std::string& profile, uint32_t start) override {
    created.push_back(Key(gpu_index, profile, start));
    if (!fail_create.ok()) return fail_create;
    return "MIG-created-" + std::to_string(gpu_index) + "-" + profile;
  }
  Status Destroy(uint32_t gpu_index, const std::string& profile, uint32_t start) override {
    destroyed.push_back(Key(gpu_index, profile, start));
    return fail_destroy;
  }
  static std::string Key(uint32_t gpu, const std::string& profile, uint32_t start) {
    return std::to_string(gpu) + "/" + profile + "@" + std::to_string(start);
  }

  Status fail_create;
  Status fail_destroy;
  std::vector<std::string> created;
  std::vector<std::string> destroyed;
};

class TaskManagerMigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = testing::TaskManagerNode(2, "dynamic");
    TaskManagerOptions options = testing::TaskManagerTestOptions(node_, dir_, &launcher_, &clock_, log_);
    options.mig = &mig_;
    auto tm = TaskManager::Open(std::move(options));
    ASSERT_TRUE(tm.ok()) << tm.status().ToString();
    tm_ = std::move(tm.value());
  }

  static BindTask MigBind(uint64_t job) {
    BindTask bind = testing::OneGpuBind(job);
    bind.mig_profiles = {"1g.10gb"};
    bind.mig_starts = {3};
    return bind;
  }

  NodeSpec node_;
  FakeClock clock_;
  FakeProcessLauncher launcher_;
  FakeMigManager mig_;
  testing::TempDir dir_;
  testing::CapturedLog log_;
  std::unique_ptr<TaskManager> tm_;
};

TEST_F(TaskManagerMigTest, CreatedInstanceIsVisibleAndDestroyedAfterExit) {
  ASSERT_TRUE(tm_->Bind(MigBind(30)).ok());
  tm_->Poll();
  ASSERT_EQ(mig_.created, std::vector<std::string>{"1/1g.10gb@3"});
  ASSERT_EQ(launcher_.launched().size(), 1u);
  const LaunchRequest& request = launcher_.launched()[0].request;
  EXPECT_TRUE(HasEnv(request, "CUDA_VISIBLE_DEVICES=MIG-created-1-1g.10gb"));
  EXPECT_TRUE(HasEnv(request, "NVIDIA_VISIBLE_DEVICES=MIG-created-1-1g.10gb"));
  EXPECT_TRUE(mig_.destroyed.empty()) << "kept while the task runs";

  launcher_.Exit(launcher_.launched()[0].pid, 0);
  tm_->Poll();
  EXPECT_EQ(mig_.destroyed, std::vector<std::string>{"1/1g.10gb@3"});
  EXPECT_TRUE(log_.Contains("mig instance destroyed task=30.0 gpu=1"));
}

TEST_F(TaskManagerMigTest, PreemptedTaskReleasesItsInstanceWhenReaped) {
  ASSERT_TRUE(tm_->Bind(MigBind(31)).ok());
  tm_->Poll();
  PreemptTask preempt;
  preempt.task = MigBind(31).task;
  preempt.grace_ms = 1000;
  tm_->Preempt(preempt);
  tm_->Poll();
  EXPECT_EQ(mig_.destroyed, std::vector<std::string>{"1/1g.10gb@3"}) << "SIGTERM ended the fake process";
}

TEST_F(TaskManagerMigTest, CreateFailureFailsTheStartWithTheMessage) {
  mig_.fail_create = Status::FailedPrecondition("GPU 1 has MIG mode disabled");
  ASSERT_TRUE(tm_->Bind(MigBind(32)).ok());
  tm_->Poll();
  EXPECT_TRUE(launcher_.launched().empty());
  ASSERT_EQ(tm_->Outbox().size(), 1u);
  const TaskEvent& event = tm_->Outbox().begin()->second;
  EXPECT_EQ(event.kind, TaskEventKind::kFailed);
  EXPECT_EQ(event.exit_code, 127);
  EXPECT_EQ(event.message, "GPU 1 has MIG mode disabled");
  EXPECT_NE(testing::ReadFile(dir_.path() + "/tasks/32.0.0.log").find("GPU 1 has MIG mode disabled"),
            std::string::npos);
  EXPECT_TRUE(mig_.destroyed.empty()) << "nothing was created";
}

TEST_F(TaskManagerMigTest, LaunchFailureDestroysTheNewInstance) {
  launcher_.FailNextLaunch(Status::NotFound("python: not found"));
  ASSERT_TRUE(tm_->Bind(MigBind(33)).ok());
  tm_->Poll();
  EXPECT_EQ(mig_.destroyed, std::vector<std::string>{"1/1g.10gb@3"});
}

TEST_F(TaskManagerMigTest, DestroyFailureIsLoggedNotFatal) {
  mig_.fail_destroy = Status::Internal("nvmlGpuInstanceDestroy failed: In use by another client (19)");
  ASSERT_TRUE(tm_->Bind(MigBind(34)).ok());
  tm_->Poll();
  launcher_.Exit(launcher_.launched()[0].pid, 1);
  tm_->Poll();
  EXPECT_TRUE(log_.Contains("mig instance not destroyed"));
  EXPECT_EQ(tm_->Reports().at(0).state, TaskState::kFailed);
}

TEST(SimulatedMigManagerTest, NamesTheInstanceAndDestroysNothing) {
  NodeSpec node;
  node.name = "sim";
  GpuInfo gpu;
  gpu.index = 2;
  gpu.uuid = "GPU-sim-2";
  node.gpus.push_back(gpu);
  SimulatedMigManager mig(node);
  auto uuid = mig.Create(2, "1g.10gb", 5);
  ASSERT_TRUE(uuid.ok());
  EXPECT_EQ(*uuid, "MIG-GPU-sim-2-1g.10gb-5");
  EXPECT_TRUE(mig.Destroy(2, "1g.10gb", 5).ok());
  EXPECT_EQ(mig.Create(7, "1g.10gb", 0).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpool::worker
