#include "worker/runner/task_manager.h"

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "worker/runner/lease_file.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/runner/testing/fake_process_launcher.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

using testing::HasEnv;

class TaskManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = testing::TaskManagerNode(4);
    TaskManagerOptions options = testing::TaskManagerTestOptions(node_, dir_, &launcher_, &clock_, log_);
    options.base_env = {{"PATH", "/usr/bin:/bin"}};
    options.finished_retention_ms = 60'000;
    options.log_max_bytes = 1 << 20;
    DiskGuardOptions disk;
    disk.path = "/data/worker";
    disk.reserve_bytes = 1000;
    disk.clock = &clock_;
    disk.stat = [this](const std::string&) -> Result<DiskSpace> { return DiskSpace{free_bytes_, 1 << 30}; };
    disk.probe = [](const std::string&) { return Status::Ok(); };
    disk_ = std::make_unique<DiskGuard>(disk);
    options.disk = disk_.get();
    auto tm = TaskManager::Open(std::move(options));
    ASSERT_TRUE(tm.ok()) << tm.status().ToString();
    tm_ = std::move(tm.value());
  }

  static BindTask MakeBind(uint64_t job, uint32_t index, std::vector<uint32_t> gpus = {}) {
    BindTask bind;
    bind.task = TaskId{JobId(job), index, 0};
    bind.job_name = "job" + std::to_string(job);
    bind.num_tasks = 2;
    bind.command = {"python", "train.py", "--epochs", "3"};
    bind.env = {{"LR", "0.1"}};
    bind.gpu_indices = std::move(gpus);
    return bind;
  }

  static PreemptTask MakePreempt(uint64_t job, uint32_t index, uint32_t grace_ms) {
    PreemptTask p;
    p.task = TaskId{JobId(job), index, 0};
    p.grace_ms = grace_ms;
    p.reason = "higher priority job";
    return p;
  }

  std::vector<TaskEvent> Events() const {
    std::vector<TaskEvent> out;
    for (const auto& [seq, event] : tm_->Outbox()) out.push_back(event);
    return out;
  }

  NodeSpec node_;
  FakeClock clock_;
  uint64_t free_bytes_ = 1 << 30;
  std::unique_ptr<DiskGuard> disk_;
  FakeProcessLauncher launcher_;
  testing::TempDir dir_;
  testing::CapturedLog log_;
  std::unique_ptr<TaskManager> tm_;
};

TEST_F(TaskManagerTest, GangTaskGetsAnMpiHostfile) {
  BindTask bind = MakeBind(18, 1, {0});
  bind.env["GPOOL_HOSTS"] = "host-a:2,host-b:1";  // what the task sees; the hostfile comes from `hosts`
  bind.hosts = {HostSlots{"host-a", 2}, HostSlots{"host-b", 1}};
  ASSERT_TRUE(tm_->Bind(bind).ok());
  tm_->Poll();
  ASSERT_EQ(launcher_.launched().size(), 1u);
  const LaunchRequest& request = launcher_.launched()[0].request;
  const std::string path = dir_.path() + "/tasks/18.1.0.hostfile";
  EXPECT_TRUE(HasEnv(request, "GPOOL_HOSTFILE=" + path));
  EXPECT_EQ(testing::ReadFile(path), "host-a slots=2\nhost-b slots=1\n");
}

TEST_F(TaskManagerTest, ATaskWithoutAHostListGetsNoHostfileWhateverItsEnvSays) {
  BindTask bind = MakeBind(19, 0, {0});
  bind.env["GPOOL_HOSTS"] = "host-a:2";  // a user's own variable is not parsed
  ASSERT_TRUE(tm_->Bind(bind).ok());
  tm_->Poll();
  ASSERT_EQ(launcher_.launched().size(), 1u);
  for (const auto& e : launcher_.launched()[0].request.env) EXPECT_NE(e.rfind("GPOOL_HOSTFILE=", 0), 0u) << e;
}

TEST(TaskEnvTest, MpiHostfileRefusesMalformedHosts) {
  EXPECT_EQ(MpiHostfile({HostSlots{"n1", 4}}), "n1 slots=4\n");
  EXPECT_EQ(MpiHostfile({HostSlots{"n1", 0}}), "");
  EXPECT_EQ(MpiHostfile({HostSlots{"", 2}}), "");
  EXPECT_EQ(MpiHostfile({HostSlots{"n1 slots=99\nevil", 2}}), "") << "a host cannot add lines";
  EXPECT_EQ(MpiHostfile({HostSlots{"n1", 1}, HostSlots{"n2#x", 1}}), "");
}

TEST_F(TaskManagerTest, BindStartsOnNextPollWithEnvironmentAndLog) {
  ASSERT_TRUE(tm_->Bind(MakeBind(17, 0, {1, 3})).ok());
  EXPECT_TRUE(launcher_.launched().empty()) << "Ack first, start on the next Poll";
  EXPECT_FALSE(tm_->Idle());
  tm_->Poll();
  ASSERT_EQ(launcher_.launched().size(), 1u);
  const LaunchRequest& request = launcher_.launched()[0].request;
  EXPECT_EQ(request.argv, (std::vector<std::string>{"python", "train.py", "--epochs", "3"}));
  EXPECT_EQ(request.log_path, dir_.path() + "/tasks/17.0.0.log");
  EXPECT_TRUE(HasEnv(request, "CUDA_VISIBLE_DEVICES=1,3"));
  EXPECT_TRUE(HasEnv(request, "NVIDIA_VISIBLE_DEVICES=GPU-n1-1,GPU-n1-3"));
  EXPECT_TRUE(HasEnv(request, "GPOOL_JOB_ID=17"));
  EXPECT_TRUE(HasEnv(request, "GPOOL_JOB_NAME=job17"));
  EXPECT_TRUE(HasEnv(request, "GPOOL_TASK_INDEX=0"));
  EXPECT_TRUE(HasEnv(request, "GPOOL_NUM_TASKS=2"));
  EXPECT_TRUE(HasEnv(request, "GPOOL_TASK_ATTEMPT=0"));
  EXPECT_TRUE(HasEnv(request, "GPOOL_NODE_NAME=n1"));
  EXPECT_TRUE(HasEnv(request, "GPOOL_GPU_UUIDS=GPU-n1-1,GPU-n1-3"));
  EXPECT_TRUE(HasEnv(request, "LR=0.1"));
  EXPECT_TRUE(HasEnv(request, "PATH=/usr/bin:/bin"));

  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].seq, 1u);
  EXPECT_EQ(events[0].kind, TaskEventKind::kStarted);
  EXPECT_EQ(events[0].node, "n1");
  EXPECT_EQ(events[0].pid, launcher_.launched()[0].pid);
  EXPECT_EQ(events[0].time_ms, clock_.WallMs());
  EXPECT_EQ(tm_->Running(), std::vector<TaskId>{(TaskId{JobId(17), 0, 0})});
  EXPECT_TRUE(log_.Contains("task started task=17.0"));
}

TEST_F(TaskManagerTest, GoneMigInstanceFailsTheStartWithAMessage) {
  // The fixture's GPUs have MIG off; a bind for a MIG instance on GPU 2
  // must not start on the whole GPU (or anything else).
  BindTask bind = MakeBind(21, 0, {2});
  bind.mig_profiles = {"1g.10gb"};
  bind.mig_starts = {0};
  ASSERT_TRUE(tm_->Bind(bind).ok());
  tm_->Poll();
  EXPECT_TRUE(launcher_.launched().empty());
  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, TaskEventKind::kFailed);
  EXPECT_EQ(events[0].exit_code, 127);
  EXPECT_NE(events[0].message.find("GPU 2 (GPU-n1-2) has MIG off"), std::string::npos) << events[0].message;
  EXPECT_NE(testing::ReadFile(dir_.path() + "/tasks/21.0.0.log").find("gpool-worker: task not started: GPU 2"),
            std::string::npos);
  EXPECT_EQ(tm_->Reports().at(0).state, TaskState::kFailed);
  EXPECT_TRUE(tm_->Idle());
  EXPECT_TRUE(log_.Contains("task failed to start task=21.0"));
}

TEST_F(TaskManagerTest, ShareTaskGetsItsOwnAccountingFile) {
  BindTask bind = MakeBind(22, 1, {0});
  bind.gpu_memory_mib = 4096;
  ASSERT_TRUE(tm_->Bind(bind).ok());
  tm_->Poll();
  ASSERT_EQ(launcher_.launched().size(), 1u);
  const LaunchRequest& request = launcher_.launched()[0].request;
  const std::string cache = dir_.path() + "/tasks/22.1.0.vgpu.cache";
  EXPECT_TRUE(HasEnv(request, "CUDA_DEVICE_MEMORY_SHARED_CACHE=" + cache));
  EXPECT_TRUE(HasEnv(request, "CUDA_DEVICE_MEMORY_LIMIT_0=4096m"));
  EXPECT_TRUE(request.numa.empty()) << "no numa_policy";
  dir_.Write("tasks/22.1.0.vgpu.cache", "region");  // as HAMi-core would have made it
  launcher_.Exit(launcher_.launched()[0].pid, 0);
  tm_->Poll();
  EXPECT_FALSE(std::filesystem::exists(cache)) << "removed with the task";
}

TEST(TaskManagerOptionsTest, InterceptLibraryAndNumaPinningReachTheLauncher) {
  testing::TempDir dir;
  FakeClock clock;
  FakeProcessLauncher launcher;
  TaskManagerOptions options;
  options.node.name = "n2";
  options.node.cpu_milli = 8000;
  options.node.memory_mib = 8192;
  options.node.numa = {{0, 4000, 4096, "0-3"}, {1, 4000, 4096, "4-7"}};
  GpuInfo gpu;
  gpu.index = 0;
  gpu.uuid = "GPU-n2-0";
  gpu.numa = 1;
  options.node.gpus = {gpu};
  options.log_dir = dir.path() + "/tasks";
  // Present on disk: a missing one would make the share unenforceable.
  options.cuda_intercept_lib = dir.Write("vgpu/libvgpu.so", "");
  options.launcher = &launcher;
  options.clock = &clock;
  testing::CapturedLog log;
  options.logger = log.logger();
  auto tm = std::move(TaskManager::Open(std::move(options)).value());
  BindTask bind;
  bind.task = TaskId{JobId(3), 0, 0};
  bind.command = {"train"};
  bind.gpu_indices = {0};
  bind.gpu_compute_pct = 50;
  bind.sharing_qos = "fixed-share";
  bind.numa_policy = "single-numa-node";
  ASSERT_TRUE(tm->Bind(bind).ok());
  tm->Poll();
  ASSERT_EQ(launcher.launched().size(), 1u);
  const LaunchRequest& request = launcher.launched()[0].request;
  EXPECT_NE(std::find(request.env.begin(), request.env.end(), "LD_PRELOAD=" + dir.path() + "/vgpu/libvgpu.so"),
            request.env.end());
  EXPECT_EQ(request.numa.cpus, (std::vector<uint32_t>{4, 5, 6, 7}));
  EXPECT_EQ(request.numa.nodes, std::vector<int32_t>{1});
  EXPECT_TRUE(request.numa.strict);
  EXPECT_TRUE(log.Contains("numa_cpus=4-7")) << log.text();
}

TEST_F(TaskManagerTest, RebindIsIdempotentInEveryState) {
  ASSERT_TRUE(tm_->Bind(MakeBind(1, 0)).ok());
  ASSERT_TRUE(tm_->Bind(MakeBind(1, 0)).ok());  // pending
  tm_->Poll();
  ASSERT_TRUE(tm_->Bind(MakeBind(1, 0)).ok());  // running
  tm_->Poll();
  launcher_.Exit(launcher_.launched()[0].pid, 0);
  tm_->Poll();
  ASSERT_TRUE(tm_->Bind(MakeBind(1, 0)).ok());  // finished
  tm_->Poll();
  EXPECT_EQ(launcher_.launched().size(), 1u);
  // Another attempt of the same replica is a different task.
  BindTask retry = MakeBind(1, 0);
  retry.task.attempt = 1;
  ASSERT_TRUE(tm_->Bind(retry).ok());
  tm_->Poll();
  EXPECT_EQ(launcher_.launched().size(), 2u);
}

TEST_F(TaskManagerTest, BadGpuIndexIsRefusedAndNothingRecorded) {
  Status s = tm_->Bind(MakeBind(2, 0, {0, 4}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("gpu_indices[1]: GPU 4 does not exist"), std::string::npos) << s.message();
  tm_->Poll();
  EXPECT_TRUE(launcher_.launched().empty());
  EXPECT_TRUE(tm_->Outbox().empty());
  EXPECT_TRUE(tm_->Bind(MakeBind(2, 0, {0})).ok()) << "a corrected bind is accepted";
}

TEST_F(TaskManagerTest, ExitEventsAndReports) {
  ASSERT_TRUE(tm_->Bind(MakeBind(3, 0)).ok());
  ASSERT_TRUE(tm_->Bind(MakeBind(3, 1)).ok());
  tm_->Poll();
  const int64_t pid0 = launcher_.launched()[0].pid;
  const int64_t pid1 = launcher_.launched()[1].pid;
  auto reports = tm_->Reports();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].state, TaskState::kRunning);
  EXPECT_EQ(reports[0].pid, pid0);

  launcher_.Exit(pid0, 0);
  launcher_.Exit(pid1, 3);
  tm_->Poll();
  auto events = Events();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[2].kind, TaskEventKind::kExited);
  EXPECT_EQ(events[2].exit_code, 0);
  EXPECT_EQ(events[3].kind, TaskEventKind::kExited);
  EXPECT_EQ(events[3].exit_code, 3);
  EXPECT_EQ(events[3].signal, 0);
  EXPECT_EQ(events[3].pid, pid1);
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].seq, i + 1);

  reports = tm_->Reports();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].state, TaskState::kSucceeded);
  EXPECT_EQ(reports[1].state, TaskState::kFailed);
  EXPECT_EQ(reports[1].exit_code, 3);
  EXPECT_TRUE(tm_->Running().empty());
  EXPECT_TRUE(tm_->Idle());

  tm_->AckEvent(events[3].seq);
  reports = tm_->Reports();
  ASSERT_EQ(reports.size(), 1u) << "an acknowledged exit is no longer reported";
  EXPECT_EQ(reports[0].task.index, 0u);
}

TEST_F(TaskManagerTest, AckRemovesOnlyThatSeq) {
  ASSERT_TRUE(tm_->Bind(MakeBind(4, 0)).ok());
  ASSERT_TRUE(tm_->Bind(MakeBind(4, 1)).ok());
  ASSERT_TRUE(tm_->Bind(MakeBind(4, 2)).ok());
  tm_->Poll();
  ASSERT_EQ(tm_->Outbox().size(), 3u);
  tm_->AckEvent(2);
  tm_->AckEvent(2);
  tm_->AckEvent(99);
  std::vector<uint64_t> seqs;
  for (const auto& [seq, event] : tm_->Outbox()) seqs.push_back(seq);
  EXPECT_EQ(seqs, (std::vector<uint64_t>{1, 3}));
}

TEST_F(TaskManagerTest, PreemptSendsSigtermThenSigkillAfterGrace) {
  launcher_.IgnoreSignal(SIGTERM);  // a task that traps SIGTERM
  ASSERT_TRUE(tm_->Bind(MakeBind(5, 0)).ok());
  tm_->Poll();
  const int64_t pid = launcher_.launched()[0].pid;
  tm_->Preempt(MakePreempt(5, 0, 5000));
  ASSERT_EQ(launcher_.signals().size(), 1u);
  EXPECT_EQ(launcher_.signals()[0], std::make_pair(pid, SIGTERM));

  clock_.Advance(4999);
  tm_->Poll();
  EXPECT_EQ(launcher_.signals().size(), 1u) << "no SIGKILL before the grace period ends";
  EXPECT_TRUE(launcher_.IsRunning(pid));

  clock_.Advance(1);
  tm_->Poll();
  ASSERT_EQ(launcher_.signals().size(), 2u);
  EXPECT_EQ(launcher_.signals()[1], std::make_pair(pid, SIGKILL));
  tm_->Poll();  // reaps
  auto events = Events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].kind, TaskEventKind::kExited);
  EXPECT_EQ(events[1].signal, SIGKILL);
  EXPECT_EQ(events[1].exit_code, 128 + SIGKILL);
  ASSERT_EQ(tm_->Reports().size(), 1u);
  EXPECT_EQ(tm_->Reports()[0].state, TaskState::kCancelled);
  clock_.Advance(100'000);
  tm_->Poll();
  EXPECT_EQ(launcher_.signals().size(), 2u) << "SIGKILL is sent once";
}

TEST_F(TaskManagerTest, PreemptedTaskThatStopsOnSigtermIsNotKilled) {
  ASSERT_TRUE(tm_->Bind(MakeBind(6, 0)).ok());
  tm_->Poll();
  tm_->Preempt(MakePreempt(6, 0, 1000));
  tm_->Poll();
  clock_.Advance(5000);
  tm_->Poll();
  ASSERT_EQ(launcher_.signals().size(), 1u);
  EXPECT_EQ(launcher_.signals()[0].second, SIGTERM);
  auto events = Events();
  EXPECT_EQ(events.back().signal, SIGTERM);
  EXPECT_EQ(events.back().exit_code, 128 + SIGTERM);
  tm_->Preempt(MakePreempt(6, 0, 1000));  // again, after exit: no effect
  EXPECT_EQ(launcher_.signals().size(), 1u);
}

TEST_F(TaskManagerTest, TombstoneBlocksLateBind) {
  tm_->Preempt(MakePreempt(7, 0, 1000));
  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, TaskEventKind::kExited);
  EXPECT_EQ(events[0].signal, SIGTERM);
  ASSERT_TRUE(tm_->Bind(MakeBind(7, 0)).ok()) << "a late bind is accepted...";
  tm_->Poll();
  EXPECT_TRUE(launcher_.launched().empty()) << "...but never run";
  EXPECT_EQ(tm_->Outbox().size(), 1u);
  ASSERT_EQ(tm_->Reports().size(), 1u);
  EXPECT_EQ(tm_->Reports()[0].state, TaskState::kCancelled);
}

TEST_F(TaskManagerTest, PreemptBeforeStartCancels) {
  ASSERT_TRUE(tm_->Bind(MakeBind(8, 0)).ok());
  tm_->Preempt(MakePreempt(8, 0, 1000));
  tm_->Poll();
  EXPECT_TRUE(launcher_.launched().empty());
  EXPECT_TRUE(tm_->Idle());
  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, TaskEventKind::kExited);
}

TEST_F(TaskManagerTest, LaunchFailureIsAFailedEvent) {
  launcher_.FailNextLaunch(Status::NotFound("cannot run 'nope': No such file or directory"));
  ASSERT_TRUE(tm_->Bind(MakeBind(9, 0)).ok());
  tm_->Poll();
  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, TaskEventKind::kFailed);
  EXPECT_EQ(events[0].exit_code, 127);
  EXPECT_EQ(events[0].message, "cannot run 'nope': No such file or directory");
  ASSERT_EQ(tm_->Reports().size(), 1u);
  EXPECT_EQ(tm_->Reports()[0].state, TaskState::kFailed);
  EXPECT_TRUE(tm_->Idle());
}

// A bind that reached the node while it had no lease (the worker stalled
// past it, issue 48 finding 4): the node kept the task from running, so it
// is reported lost, which the coordinator requeues as a node loss, never a
// failure of the job. Any other refusal stays a failure.
TEST_F(TaskManagerTest, AStartRefusedForWantOfALeaseIsLostNotFailed) {
  launcher_.FailNextLaunch(
      Status::FailedPrecondition(std::string(kNoLeaseStart) + ": node lease expired 900 ms ago"));
  ASSERT_TRUE(tm_->Bind(MakeBind(9, 0)).ok());
  tm_->Poll();
  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, TaskEventKind::kLost);
  EXPECT_EQ(events[0].message.rfind(kNoLeaseStart, 0), 0u) << events[0].message;
  ASSERT_EQ(tm_->Reports().size(), 1u);
  EXPECT_EQ(tm_->Reports()[0].state, TaskState::kLost) << "a re-registration reports it lost too";
  EXPECT_TRUE(tm_->Idle());

  launcher_.FailNextLaunch(Status::FailedPrecondition("cannot run the task supervisor /x: No such file"));
  ASSERT_TRUE(tm_->Bind(MakeBind(10, 0)).ok());
  tm_->Poll();
  events = Events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].kind, TaskEventKind::kFailed);
}

TEST_F(TaskManagerTest, AFullDataDirRefusesNewTasksKeepsRunningOnesAndResumesByItself) {
  ASSERT_TRUE(tm_->Bind(MakeBind(10, 0)).ok());
  tm_->Poll();
  ASSERT_EQ(launcher_.launched().size(), 1u);
  free_bytes_ = 0;
  clock_.Advance(100);  // past the guard's cached look at the disk
  Status refused = tm_->Bind(MakeBind(11, 0));
  EXPECT_EQ(refused, Status::Unavailable("disk full (/data/worker, 0 bytes free)"));
  EXPECT_TRUE(tm_->Bind(MakeBind(10, 0)).ok()) << "a known task's bind is still answered";
  tm_->Poll();
  EXPECT_EQ(launcher_.launched().size(), 1u);
  EXPECT_TRUE(launcher_.signals().empty()) << "the running task is left alone";
  free_bytes_ = 1 << 30;
  EXPECT_EQ(tm_->Bind(MakeBind(11, 0)).code(), StatusCode::kUnavailable) << "looked at again once per second";
  clock_.Advance(1000);
  EXPECT_TRUE(tm_->Bind(MakeBind(11, 0)).ok());
  tm_->Poll();
  EXPECT_EQ(launcher_.launched().size(), 2u);
}

TEST_F(TaskManagerTest, StopAllTerminatesEverythingAndRefusesNewBinds) {
  launcher_.IgnoreSignal(SIGTERM);
  ASSERT_TRUE(tm_->Bind(MakeBind(10, 0)).ok());
  ASSERT_TRUE(tm_->Bind(MakeBind(10, 1)).ok());
  tm_->Poll();
  ASSERT_TRUE(tm_->Bind(MakeBind(10, 2)).ok());  // pending at shutdown
  tm_->StopAll(5000);
  EXPECT_EQ(tm_->Bind(MakeBind(11, 0)).code(), StatusCode::kUnavailable);
  EXPECT_EQ(launcher_.signals().size(), 2u);
  tm_->Poll();
  EXPECT_EQ(launcher_.launched().size(), 2u) << "the pending task is never started";
  EXPECT_FALSE(tm_->Idle());
  clock_.Advance(5000);
  tm_->Poll();
  tm_->Poll();
  EXPECT_TRUE(tm_->Idle());
  EXPECT_EQ(launcher_.signals().size(), 4u);
  EXPECT_EQ(launcher_.signals()[3].second, SIGKILL);
}

TEST_F(TaskManagerTest, TailLog) {
  ASSERT_TRUE(tm_->Bind(MakeBind(12, 0)).ok());
  tm_->Poll();
  const std::string path = launcher_.launched()[0].request.log_path;
  std::ofstream(path) << "line 1\nline 2\n";
  auto tail = tm_->TailLog(TaskId{JobId(12), 0, 0}, 7);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_EQ(tail->data, "line 2\n");
  EXPECT_EQ(tail->size, 14u);
  EXPECT_TRUE(tail->truncated);
  EXPECT_EQ(tm_->TailLog(TaskId{JobId(99), 0, 0}, 7).status().code(), StatusCode::kNotFound);
}

TEST_F(TaskManagerTest, AcknowledgedFinishedTasksExpireAfterRetention) {
  ASSERT_TRUE(tm_->Bind(MakeBind(13, 0)).ok());
  tm_->Poll();
  launcher_.Exit(launcher_.launched()[0].pid, 0);
  tm_->Poll();
  tm_->AckEvent(1);
  tm_->AckEvent(2);
  clock_.Advance(59'000);
  tm_->Poll();
  ASSERT_TRUE(tm_->Bind(MakeBind(13, 0)).ok());
  tm_->Poll();
  EXPECT_EQ(launcher_.launched().size(), 1u) << "still remembered within the retention";
  clock_.Advance(11'000);
  tm_->Poll();
  ASSERT_TRUE(tm_->Bind(MakeBind(13, 0)).ok());
  tm_->Poll();
  EXPECT_EQ(launcher_.launched().size(), 2u) << "forgotten after the retention";
}

TEST(TaskManagerOpenTest, RequiresLauncherAndClock) {
  TaskManagerOptions options;
  options.log_dir = "/tmp";
  EXPECT_EQ(TaskManager::Open(options).status().code(), StatusCode::kInvalidArgument);
}

// A task's log is held to the cap while it runs: the next turn after it
// overflows, the log starts again and FetchLog says how much moved out.
TEST_F(TaskManagerTest, ARunningTasksLogIsHeldToItsCapAndTheTailSaysSo) {
  ASSERT_TRUE(tm_->Bind(MakeBind(21, 0)).ok());
  tm_->Poll();
  ASSERT_EQ(launcher_.launched().size(), 1u);
  const std::string log = launcher_.launched()[0].request.log_path;
  const std::string flood((1 << 20) + 1, 'x');  // the fixture caps logs at 1 MiB
  std::ofstream(log, std::ios::app) << flood;
  clock_.Advance(250);  // logs are checked four times a second
  tm_->Poll();
  auto tail = tm_->TailLog(TaskId{JobId(21), 0, 0}, 1 << 20);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_GE(tail->dropped, flood.size());
  EXPECT_LT(tail->size, 1024u) << "the live log starts again";
  EXPECT_NE(std::string(tail->data).find("this log is capped"), std::string::npos);
  EXPECT_TRUE(log_.Contains("task log capped task=21.0"));
}

}  // namespace
}  // namespace gpool::worker

namespace gpool::worker {
namespace {

// The node's own guard: a bind for GPUs whose whole-GPU holder still runs
// (the coordinator moved on from it: lost, requeued, being stopped) waits
// until that holder's processes are gone.
TEST_F(TaskManagerTest, ATaskWaitsForItsGpusUntilTheirOldHolderIsGone) {
  ASSERT_TRUE(tm_->Bind(MakeBind(1, 0, {0, 1})).ok());
  tm_->Poll();
  ASSERT_EQ(launcher_.launched().size(), 1u);
  const int64_t old_pid = launcher_.launched()[0].pid;
  launcher_.IgnoreSignal(SIGTERM);  // it takes its time to stop
  tm_->Preempt(MakePreempt(1, 0, 60'000));
  ASSERT_TRUE(tm_->Bind(MakeBind(2, 0, {1, 2})).ok());
  ASSERT_TRUE(tm_->Bind(MakeBind(3, 0, {3})).ok());
  tm_->Poll();
  ASSERT_EQ(launcher_.launched().size(), 2u) << "job 3's GPU is free; job 2's GPU 1 is still held";
  EXPECT_EQ(launcher_.launched()[1].request.log_path, dir_.path() + "/tasks/3.0.0.log");
  EXPECT_FALSE(tm_->Idle());
  EXPECT_TRUE(log_.Contains("task waits for its GPUs"));
  tm_->Poll();
  EXPECT_EQ(launcher_.launched().size(), 2u);
  launcher_.Exit(old_pid, 143);
  tm_->Poll();  // reaped
  tm_->Poll();  // started
  ASSERT_EQ(launcher_.launched().size(), 3u);
  EXPECT_EQ(launcher_.launched()[2].request.log_path, dir_.path() + "/tasks/2.0.0.log");
}

// Starts of one turn are launched side by side (BeginLaunch), so a start
// begun in this turn holds its GPUs too: two binds for one whole GPU that
// arrive together never run together.
TEST_F(TaskManagerTest, TwoStartsOfOneTurnNeverShareAWholeGpu) {
  ASSERT_TRUE(tm_->Bind(MakeBind(1, 0, {0})).ok());
  ASSERT_TRUE(tm_->Bind(MakeBind(2, 0, {0, 1})).ok());
  ASSERT_TRUE(tm_->Bind(MakeBind(3, 0, {2})).ok());
  tm_->Poll();
  ASSERT_EQ(launcher_.launched().size(), 2u) << "job 2 waits for GPU 0; job 3's GPU is free";
  EXPECT_EQ(launcher_.launched()[0].request.log_path, dir_.path() + "/tasks/1.0.0.log");
  EXPECT_EQ(launcher_.launched()[1].request.log_path, dir_.path() + "/tasks/3.0.0.log");
  launcher_.Exit(launcher_.launched()[0].pid, 0);
  tm_->Poll();  // reaped
  tm_->Poll();  // started
  ASSERT_EQ(launcher_.launched().size(), 3u);
  EXPECT_EQ(launcher_.launched()[2].request.log_path, dir_.path() + "/tasks/2.0.0.log");
}

}  // namespace
}  // namespace gpool::worker
