// TaskManager across a worker restart (adopt_tasks): what one manager leaves
// on disk, the next one adopts through its launcher. Launchers are fakes
// scripted with what a supervisor would have left (fake_process_launcher.h);
// the real adoption is in supervised_launcher_test.cc and
// tests/worker_restart_test.cc.
#include <csignal>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "protocol/wire.h"
#include "worker/runner/atomic_file.h"
#include "worker/runner/supervisor_state.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_manager.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/runner/testing/fake_process_launcher.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

namespace fs = std::filesystem;

class TaskManagerAdoptTest : public ::testing::Test {
 protected:
  void SetUp() override { node_ = testing::TaskManagerNode(4); }

  // A manager as a (re)started worker opens it, on `launcher`.
  std::unique_ptr<TaskManager> Open(FakeProcessLauncher* launcher, const std::string& state_dir = "") {
    TaskManagerOptions options = testing::TaskManagerTestOptions(node_, dir_, launcher, &clock_, log_);
    options.state_dir = state_dir;
    options.base_env = {{"PATH", "/usr/bin:/bin"}};
    options.finished_retention_ms = 60'000;
    options.adopt_tasks = true;
    auto tm = TaskManager::Open(std::move(options));
    EXPECT_TRUE(tm.ok()) << tm.status().ToString();
    return tm.ok() ? std::move(tm).value() : nullptr;
  }

  static BindTask MakeBind(uint64_t job) {
    return testing::OneGpuBind(job);
  }

  // A task bound and started by a first manager, which then goes away
  // without a word (kill -9); its state directory.
  std::string StartedByAPreviousWorker(uint64_t job, int64_t* pid) {
    FakeProcessLauncher first;
    auto tm = Open(&first);
    EXPECT_TRUE(tm->Bind(MakeBind(job)).ok());
    tm->Poll();
    EXPECT_EQ(first.launched().size(), 1u);
    *pid = first.launched().at(0).pid;
    return first.launched().at(0).request.state_dir;
  }

  std::string StateDir(uint64_t job) const { return TaskStateDir(dir_.path() + "/tasks", TaskId{JobId(job), 0, 0}); }

  static std::vector<TaskEvent> Events(const TaskManager& tm) {
    std::vector<TaskEvent> out;
    for (const auto& [seq, event] : tm.Outbox()) out.push_back(event);
    return out;
  }

  NodeSpec node_;
  FakeClock clock_;
  testing::TempDir dir_;
  testing::CapturedLog log_;
};

TEST_F(TaskManagerAdoptTest, TheBindIsOnDiskBeforeTheTaskIsLaunched) {
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher);
  ASSERT_TRUE(tm->Bind(MakeBind(5)).ok());
  tm->Poll();
  ASSERT_EQ(launcher.launched().size(), 1u);
  EXPECT_EQ(launcher.launched()[0].request.state_dir, StateDir(5));
  auto bytes = ReadWholeFile(StateDir(5) + "/bind");
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto bind = wire::UnpackFromString<BindTask>(*bytes);
  ASSERT_TRUE(bind.ok()) << bind.status().ToString();
  EXPECT_EQ(bind->task, MakeBind(5).task);
  EXPECT_EQ(bind->command, MakeBind(5).command);
}

TEST_F(TaskManagerAdoptTest, ARunningTaskIsAdoptedWithItsPidAndItsLaterExitIsReported) {
  int64_t pid = 0;
  const std::string dir = StartedByAPreviousWorker(7, &pid);
  FakeProcessLauncher restarted;
  restarted.Adoptable(dir, AdoptedProcess{.pid = pid, .running = true});
  auto tm = Open(&restarted);
  ASSERT_EQ(restarted.adopted(), std::vector<std::string>{dir});

  auto reports = tm->Reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].task, MakeBind(7).task);
  EXPECT_EQ(reports[0].state, TaskState::kRunning);
  EXPECT_EQ(reports[0].pid, pid);
  EXPECT_TRUE(tm->Outbox().empty()) << "its start was reported by the previous worker";
  EXPECT_EQ(tm->RunningPids().count(pid), 1u);
  EXPECT_FALSE(tm->Idle());
  EXPECT_TRUE(tm->Bind(MakeBind(7)).ok()) << "a resent bind is the same task";
  tm->Poll();
  EXPECT_TRUE(restarted.launched().empty()) << "an adopted task is never started again";

  restarted.Exit(pid, 0);
  tm->Poll();
  auto events = Events(*tm);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, TaskEventKind::kExited);
  EXPECT_EQ(events[0].pid, pid);
  EXPECT_EQ(events[0].exit_code, 0);
  EXPECT_EQ(tm->Reports().at(0).state, TaskState::kSucceeded);
  EXPECT_TRUE(tm->Idle());
}

TEST_F(TaskManagerAdoptTest, AnAdoptedTaskIsPreemptedLikeAnyOther) {
  int64_t pid = 0;
  const std::string dir = StartedByAPreviousWorker(8, &pid);
  FakeProcessLauncher restarted;
  restarted.IgnoreSignal(SIGTERM);
  restarted.Adoptable(dir, AdoptedProcess{.pid = pid, .running = true});
  auto tm = Open(&restarted);
  tm->Preempt(PreemptTask{.task = MakeBind(8).task, .grace_ms = 1'000, .reason = "reclaimed"});
  clock_.Advance(1'000);
  tm->Poll();
  ASSERT_EQ(restarted.signals().size(), 2u);
  EXPECT_EQ(restarted.signals()[0], std::make_pair(pid, SIGTERM));
  EXPECT_EQ(restarted.signals()[1], std::make_pair(pid, SIGKILL));
  tm->Poll();
  EXPECT_EQ(tm->Reports().at(0).state, TaskState::kCancelled);
  EXPECT_NE(Events(*tm).at(0).message.find("stopped by the worker: reclaimed"), std::string::npos);
}

TEST_F(TaskManagerAdoptTest, AnExitWhileTheWorkerWasAwayIsReportedWithItsReason) {
  int64_t pid = 0;
  const std::string dir = StartedByAPreviousWorker(9, &pid);
  FakeProcessLauncher restarted;
  AdoptedProcess ended{.pid = pid, .running = false};
  ended.exit = ExitInfo{.pid = pid, .exit_code = 137, .signal = SIGKILL, .reason = "node lease expired: 12 ms ago"};
  restarted.Adoptable(dir, ended);
  auto tm = Open(&restarted);
  auto reports = tm->Reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].state, TaskState::kLost);  // the node ended it, not the task
  EXPECT_EQ(reports[0].exit_code, 137);
  EXPECT_EQ(reports[0].signal, SIGKILL);
  auto events = Events(*tm);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, TaskEventKind::kLost);
  EXPECT_NE(events[0].message.find("node lease expired"), std::string::npos) << events[0].message;
  EXPECT_TRUE(tm->Idle());
}

TEST_F(TaskManagerAdoptTest, ATaskLostWithItsSupervisorIsReportedLostNotSilentlyGone) {
  int64_t pid = 0;
  StartedByAPreviousWorker(10, &pid);
  FakeProcessLauncher restarted;  // nothing scripted: no supervisor, no record
  auto tm = Open(&restarted);
  auto reports = tm->Reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].state, TaskState::kLost);
  auto events = Events(*tm);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, TaskEventKind::kLost);
  EXPECT_EQ(events[0].exit_code, 255);
  EXPECT_NE(events[0].message.find("lost with its supervisor"), std::string::npos) << events[0].message;
}

TEST_F(TaskManagerAdoptTest, AStopAskedOfThePreviousWorkerIsReportedAsAStop) {
  FakeProcessLauncher first;
  first.IgnoreSignal(SIGTERM);
  auto tm = Open(&first);
  ASSERT_TRUE(tm->Bind(MakeBind(11)).ok());
  tm->Poll();
  const int64_t pid = first.launched().at(0).pid;
  tm->Preempt(PreemptTask{.task = MakeBind(11).task, .grace_ms = 30'000, .reason = "job cancelled"});
  tm.reset();  // the worker dies during the grace period

  FakeProcessLauncher restarted;
  AdoptedProcess ended{.pid = pid, .running = false};
  ended.exit = ExitInfo{.pid = pid, .exit_code = 143, .signal = SIGTERM};
  restarted.Adoptable(StateDir(11), ended);
  auto again = Open(&restarted);
  EXPECT_EQ(again->Reports().at(0).state, TaskState::kCancelled);
  EXPECT_NE(Events(*again).at(0).message.find("job cancelled"), std::string::npos);
}

TEST_F(TaskManagerAdoptTest, AnAcknowledgedExitIsNotReportedAgainAndItsStateGoesAfterTheRetention) {
  FakeProcessLauncher first;
  auto tm = Open(&first);
  ASSERT_TRUE(tm->Bind(MakeBind(12)).ok());
  tm->Poll();
  const int64_t pid = first.launched().at(0).pid;
  first.Exit(pid, 3);
  tm->Poll();
  ASSERT_EQ(tm->Outbox().size(), 2u);  // started, exited
  // What a supervisor and the hosts step would have left beside the records.
  const std::string hostfile = TaskHostfilePath(dir_.path() + "/tasks", TaskId{JobId(12), 0, 0});
  for (const std::string& path : {SupervisorSpecPath(StateDir(12)), SupervisorLogPath(StateDir(12)), hostfile}) {
    std::ofstream(path) << "left";
  }
  for (uint64_t seq : {1u, 2u}) tm->AckEvent(seq);
  // Acknowledged: what a restart reads stays, the rest goes at once.
  EXPECT_TRUE(fs::exists(StateDir(12) + "/bind"));
  EXPECT_TRUE(fs::exists(StateDir(12) + "/acked"));
  EXPECT_FALSE(fs::exists(SupervisorSpecPath(StateDir(12))));
  EXPECT_FALSE(fs::exists(SupervisorLogPath(StateDir(12))));
  EXPECT_FALSE(fs::exists(hostfile));
  tm.reset();

  FakeProcessLauncher restarted;
  AdoptedProcess ended{.pid = pid, .running = false};
  ended.exit = ExitInfo{.pid = pid, .exit_code = 3};
  restarted.Adoptable(StateDir(12), ended);
  auto again = Open(&restarted);
  EXPECT_TRUE(again->Outbox().empty());
  EXPECT_TRUE(again->Reports().empty());
  EXPECT_TRUE(again->Bind(MakeBind(12)).ok());
  again->Poll();
  EXPECT_TRUE(restarted.launched().empty()) << "a duplicate bind within the retention is recognised";
  EXPECT_TRUE(fs::exists(StateDir(12)));
  clock_.Advance(60'000);
  again->Poll();
  EXPECT_FALSE(fs::exists(StateDir(12))) << "removed with the record";
}

// A worker given a run dir (run_dir.h) keeps new records there, and still
// adopts, stops and finally removes what a worker without one left under
// its log dir (an upgrade while tasks run).
TEST_F(TaskManagerAdoptTest, WithARunDirNewRecordsGoThereAndTasksLeftInTheLogDirAreStillAdopted) {
  int64_t pid = 0;
  const std::string old_dir = StartedByAPreviousWorker(7, &pid);
  ASSERT_EQ(old_dir, StateDir(7));
  const std::string run = dir_.path() + "/run";
  FakeProcessLauncher restarted;
  restarted.IgnoreSignal(SIGTERM);  // it ends when the test says
  restarted.Adoptable(old_dir, AdoptedProcess{.pid = pid, .running = true});
  auto tm = Open(&restarted, run);
  ASSERT_EQ(restarted.adopted(), std::vector<std::string>{old_dir});
  EXPECT_EQ(tm->Reports().at(0).state, TaskState::kRunning);

  tm->Preempt(PreemptTask{.task = MakeBind(7).task, .grace_ms = 1'000, .reason = "drained"});
  EXPECT_TRUE(fs::exists(old_dir + "/stop")) << "the adopted task's stop is recorded where its supervisor looks";
  restarted.Exit(pid, 0);
  tm->Poll();
  std::vector<uint64_t> seqs;
  for (const auto& [seq, event] : tm->Outbox()) seqs.push_back(seq);
  for (uint64_t seq : seqs) tm->AckEvent(seq);
  ASSERT_EQ(seqs.size(), 1u);  // job 7 stopped
  BindTask other = MakeBind(8);
  other.gpu_indices = {2};
  ASSERT_TRUE(tm->Bind(other).ok());
  tm->Poll();
  ASSERT_EQ(restarted.launched().size(), 1u);
  const std::string new_dir = TaskStateDir(run, MakeBind(8).task);
  EXPECT_EQ(restarted.launched()[0].request.state_dir, new_dir);
  EXPECT_TRUE(fs::exists(new_dir + "/bind"));
  EXPECT_FALSE(fs::exists(StateDir(8))) << "nothing new under the log dir";

  clock_.Advance(60'000);
  tm->Poll();
  EXPECT_FALSE(fs::exists(old_dir)) << "and its records go after the retention, from where they were";
}

TEST_F(TaskManagerAdoptTest, AStateDirectoryWithoutABindIsRemoved) {
  fs::create_directories(StateDir(13));
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher);
  EXPECT_TRUE(launcher.adopted().empty());
  EXPECT_TRUE(tm->Reports().empty());
  EXPECT_FALSE(fs::exists(StateDir(13)));
}

TEST_F(TaskManagerAdoptTest, WithoutAdoptionNothingIsKeptOnDisk) {
  FakeProcessLauncher launcher;
  TaskManagerOptions options = testing::TaskManagerTestOptions(node_, dir_, &launcher, &clock_, log_);
  auto tm = TaskManager::Open(std::move(options));
  ASSERT_TRUE(tm.ok());
  ASSERT_TRUE((*tm)->Bind(MakeBind(14)).ok());
  (*tm)->Poll();
  ASSERT_EQ(launcher.launched().size(), 1u);
  EXPECT_TRUE(launcher.launched()[0].request.state_dir.empty());
  EXPECT_FALSE(fs::exists(StateDir(14)));
}

}  // namespace
}  // namespace gpool::worker
