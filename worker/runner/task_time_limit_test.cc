// A bind's max_runtime_ms: the worker stops the task once it has run that
// long (SIGTERM, the bind's grace, SIGKILL) and says why ("time limit"),
// counting from its real start across worker restarts.
#include <csignal>

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "worker/runner/task_manager.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/runner/testing/fake_process_launcher.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

class TaskTimeLimitTest : public ::testing::Test {
 protected:
  std::unique_ptr<TaskManager> Open(FakeProcessLauncher* launcher, bool adopt = false) {
    TaskManagerOptions options =
        testing::TaskManagerTestOptions(testing::TaskManagerNode(2), dir_, launcher, &clock_, log_);
    options.adopt_tasks = adopt;
    auto tm = TaskManager::Open(std::move(options));
    EXPECT_TRUE(tm.ok()) << tm.status().ToString();
    return tm.ok() ? std::move(tm).value() : nullptr;
  }

  static BindTask LimitedBind(uint64_t max_runtime_ms, uint32_t grace_ms) {
    BindTask bind;
    bind.task = TaskId{JobId(7), 0, 0};
    bind.job_name = "job7";
    bind.num_tasks = 1;
    bind.command = {"python", "train.py"};
    bind.max_runtime_ms = max_runtime_ms;
    bind.time_limit_grace_ms = grace_ms;
    return bind;
  }

  FakeClock clock_;
  testing::TempDir dir_;
  testing::CapturedLog log_;
};

TEST_F(TaskTimeLimitTest, ATaskIsStoppedAtItsMaxRuntimeAndKilledAfterItsGrace) {
  FakeProcessLauncher launcher;
  launcher.IgnoreSignal(SIGTERM);  // a task that will not stop by itself
  auto tm = Open(&launcher);
  ASSERT_TRUE(tm->Bind(LimitedBind(60'000, 5'000)).ok());
  tm->Poll();
  const int64_t pid = launcher.launched().at(0).pid;
  clock_.Advance(59'999);
  tm->Poll();
  EXPECT_TRUE(launcher.signals().empty()) << "not before its max_runtime";
  clock_.Advance(1);
  tm->Poll();
  ASSERT_EQ(launcher.signals().size(), 1u);
  EXPECT_EQ(launcher.signals()[0], std::make_pair(pid, SIGTERM));
  clock_.Advance(4'999);
  tm->Poll();
  EXPECT_EQ(launcher.signals().size(), 1u) << "the grace runs before SIGKILL";
  clock_.Advance(1);
  tm->Poll();
  ASSERT_EQ(launcher.signals().size(), 2u);
  EXPECT_EQ(launcher.signals()[1], std::make_pair(pid, SIGKILL));
  tm->Poll();  // reaps
  const TaskEvent& exited = std::prev(tm->Outbox().end())->second;
  EXPECT_EQ(exited.kind, TaskEventKind::kExited);
  EXPECT_EQ(exited.signal, SIGKILL);
  EXPECT_TRUE(StoppedForTimeLimit(exited.message)) << exited.message;
  EXPECT_TRUE(log_.Contains("max_runtime")) << log_.text();
}

TEST_F(TaskTimeLimitTest, WithoutALimitATaskRunsOn) {
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher);
  ASSERT_TRUE(tm->Bind(LimitedBind(0, 5'000)).ok());
  tm->Poll();
  clock_.Advance(400LL * 24 * 3'600'000);
  tm->Poll();
  EXPECT_TRUE(launcher.signals().empty());
}

TEST_F(TaskTimeLimitTest, AnAdoptedTaskKeepsTheClockOfItsRealStart) {
  // The previous worker started it; 50 of its 60 s are gone when the new
  // one adopts it, so it has 10 s left, not 60.
  std::string state_dir;
  int64_t pid = 0;
  {
    FakeProcessLauncher first;
    auto tm = Open(&first, /*adopt=*/true);
    ASSERT_TRUE(tm->Bind(LimitedBind(60'000, 1'000)).ok());
    tm->Poll();
    state_dir = first.launched().at(0).request.state_dir;
    pid = first.launched().at(0).pid;
  }
  const int64_t started = clock_.WallMs();
  clock_.Advance(50'000);
  FakeProcessLauncher restarted;
  restarted.Adoptable(state_dir, AdoptedProcess{.pid = pid, .running = true, .start_wall_ms = started});
  auto tm = Open(&restarted, /*adopt=*/true);
  clock_.Advance(9'999);
  tm->Poll();
  EXPECT_TRUE(restarted.signals().empty());
  clock_.Advance(1);
  tm->Poll();
  ASSERT_EQ(restarted.signals().size(), 1u);
  EXPECT_EQ(restarted.signals()[0], std::make_pair(pid, SIGTERM));
}

}  // namespace
}  // namespace gpool::worker
