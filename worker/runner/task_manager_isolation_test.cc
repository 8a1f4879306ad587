// TaskManager with isolation on (issue 31), on the fake launcher: what a
// bind's run_as and the worker's default make of the launch request, a
// start refused for root, and the task's directory removed with its record.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/messages_worker.h"
#include "protocol/model/run_as.h"
#include "worker/runner/task_manager.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/runner/testing/fake_process_launcher.h"

namespace gpool::worker {
namespace {

class TaskManagerIsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "giving a task its directory needs chown (root)";
    TaskManagerOptions options = testing::TaskManagerTestOptions(testing::TaskManagerNode(2), dir_, &launcher_,
                                                                 &clock_, log_);
    options.finished_retention_ms = 1'000;
    options.isolation.enabled = true;
    options.isolation.default_identity = TaskIdentity{.set = true, .uid = 65534, .gid = 65534, .user = "nobody"};
    options.isolation.gpu_device_nodes = "";
    auto tm = TaskManager::Open(std::move(options));
    ASSERT_TRUE(tm.ok()) << tm.status().ToString();
    tm_ = std::move(tm).value();
  }

  static BindTask Bind(uint64_t job, RunAs run_as = {}) {
    BindTask bind;
    bind.task = TaskId{JobId(job), 0, 0};
    bind.command = {"true"};
    bind.run_as = run_as;
    return bind;
  }

  testing::TempDir dir_;
  testing::CapturedLog log_;
  FakeClock clock_;
  FakeProcessLauncher launcher_;
  std::unique_ptr<TaskManager> tm_;
};

TEST_F(TaskManagerIsolationTest, TheBindsIdentityReachesTheLaunchAndItsDirGoesWithItsRecord) {
  ASSERT_TRUE(tm_->Bind(Bind(1, RunAs{.uid = 1500, .gid = 1501, .user = "alice"})).ok());
  ASSERT_TRUE(tm_->Bind(Bind(2)).ok());
  tm_->Poll();
  ASSERT_EQ(launcher_.launched().size(), 2u);
  const LaunchRequest& alice = launcher_.launched()[0].request;
  EXPECT_EQ(alice.identity, (TaskIdentity{.set = true, .uid = 1500, .gid = 1501, .user = "alice"}));
  EXPECT_TRUE(alice.own_pid_namespace);
  const std::string work = TaskWorkDir(dir_.path() + "/tasks", TaskId{JobId(1), 0, 0});
  EXPECT_EQ(alice.work_dir, work);
  struct stat st {};
  ASSERT_EQ(stat(work.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1500u);
  ASSERT_EQ(stat(alice.log_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1500u);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(launcher_.launched()[1].request.identity.uid, 65534u) << "no mapping: the worker's default";
  EXPECT_NE(log_.text().find("uid=1500 gid=1501 user=alice pid_ns=true"), std::string::npos) << log_.text();

  launcher_.Exit(launcher_.launched()[0].pid, 0);
  tm_->Poll();
  tm_->AckEvent(1);
  tm_->AckEvent(2);
  tm_->AckEvent(3);
  clock_.Advance(61'000);  // past the retention and the expiry check's interval
  tm_->Poll();
  EXPECT_FALSE(std::filesystem::exists(work)) << "removed once the finished task is forgotten";
}

TEST_F(TaskManagerIsolationTest, ATaskMappedToRootDoesNotStart) {
  ASSERT_TRUE(tm_->Bind(Bind(3, RunAs{.uid = 0, .gid = 0, .user = "root"})).ok());
  tm_->Poll();
  EXPECT_TRUE(launcher_.launched().empty());
  const std::string text = log_.text();
  EXPECT_NE(text.find("task failed to start task=3.0 "), std::string::npos) << text;
  EXPECT_NE(text.find("--task-user root"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpool::worker
