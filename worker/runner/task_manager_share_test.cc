// TaskManager and GPU shares (share_enforcement.h): the interposer's private
// directory and ledger for each interposed attempt, gone however the attempt
// ends, and the bypass catch that stops a task over its share.
#include <csignal>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "worker/discovery/nvml_usage_sampler.h"
#include "worker/runner/task_manager.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/runner/task_usage.h"
#include "worker/runner/testing/fake_process_launcher.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

namespace fs = std::filesystem;

class TaskManagerShareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A dummy file stands in for libgpool-cuda.so.1: only the link to it
    // is under test here (the interposer is worker/cuda/'s).
    interposer_ = dir_.path() + "/lib/libgpool-cuda.so.1";
    fs::create_directories(dir_.path() + "/lib");
    fs::create_directories(ledger_dir());
    std::ofstream(interposer_) << "not a library";
  }

  std::unique_ptr<TaskManager> Open(FakeProcessLauncher* launcher, bool adopt = false) {
    TaskManagerOptions options =
        testing::TaskManagerTestOptions(testing::TaskManagerNode(4, mig_mode_), dir_, launcher, &clock_, log_);
    options.base_env = {{"PATH", "/usr/bin:/bin"}, {"LD_LIBRARY_PATH", "/worker/lib"}};
    options.share = share_;
    options.cuda_intercept_lib = intercept_lib_;
    options.adopt_tasks = adopt;
    auto tm = TaskManager::Open(std::move(options));
    EXPECT_TRUE(tm.ok()) << tm.status().ToString();
    return tm.ok() ? std::move(tm).value() : nullptr;
  }

  static BindTask ShareBind(uint64_t job, uint32_t memory_mib = 10240) {
    BindTask bind = testing::OneGpuBind(job);
    bind.gpu_memory_mib = memory_mib;
    bind.gpu_compute_pct = 30;
    bind.sharing_qos = "fixed-share";
    bind.env = {{"LD_LIBRARY_PATH", "/opt/app/lib"}};
    return bind;
  }

  std::string ledger_dir() const { return dir_.path() + "/shm"; }
  std::string CudaDir(uint64_t job) const { return TaskCudaDir(dir_.path() + "/tasks", TaskId{JobId(job), 0, 0}); }
  std::string Ledger(uint64_t job) const { return TaskCudaLedgerPath(ledger_dir(), TaskId{JobId(job), 0, 0}); }

  // What the interposer would have made while the task ran.
  void WriteLedger(uint64_t job) const { std::ofstream(Ledger(job)) << "ledger"; }
  bool Gone(uint64_t job) const { return !fs::exists(CudaDir(job)) && !fs::exists(Ledger(job)); }

  const TaskEvent& LastEvent(const TaskManager& tm) const { return std::prev(tm.Outbox().end())->second; }

  FakeClock clock_;
  testing::TempDir dir_;
  testing::CapturedLog log_;
  std::string interposer_;
  ShareEnforcementOptions share_{.interposer = "", .real_driver = "/usr/lib64/libcuda.so.1", .ledger_dir = "",
                                 .memory_tolerance_mib = 64};
  std::string intercept_lib_;
  std::string mig_mode_;

  void Interpose() {
    share_.interposer = interposer_;
    share_.ledger_dir = ledger_dir();
  }
};

TEST_F(TaskManagerShareTest, AShareTaskFindsTheInterposerFirstOnItsLibraryPath) {
  Interpose();
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher);
  ASSERT_TRUE(tm->Bind(ShareBind(1)).ok());
  tm->Poll();
  ASSERT_EQ(launcher.launched().size(), 1u);
  const LaunchRequest& request = launcher.launched()[0].request;
  EXPECT_EQ(fs::read_symlink(CudaDir(1) + "/libcuda.so.1").string(), interposer_);
  EXPECT_TRUE(testing::HasEnv(request, "LD_LIBRARY_PATH=" + CudaDir(1) + ":/opt/app/lib"));
  EXPECT_TRUE(testing::HasEnv(request, "GPOOL_CUDA_LEDGER=" + Ledger(1)));
  EXPECT_TRUE(testing::HasEnv(request, "GPOOL_CUDA_REAL_DRIVER=/usr/lib64/libcuda.so.1"));
  EXPECT_TRUE(testing::HasEnv(request, "GPOOL_GPU_MEMORY_MIB=10240"));
  EXPECT_TRUE(testing::HasEnv(request, "GPOOL_GPU_COMPUTE_PCT=30"));
  EXPECT_TRUE(testing::HasEnv(request, "GPOOL_SHARING_QOS=fixed-share"));
}

// What each object costs the share is the worker's to say, never the task's.
TEST_F(TaskManagerShareTest, TheWorkerSetsWhatObjectsCostTheShare) {
  Interpose();
  share_.object_costs = "context=300M";
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher);
  BindTask bind = ShareBind(1);
  bind.env["GPOOL_CUDA_OBJECT_COSTS"] = "none";
  ASSERT_TRUE(tm->Bind(bind).ok());
  tm->Poll();
  ASSERT_EQ(launcher.launched().size(), 1u);
  EXPECT_TRUE(testing::HasEnv(launcher.launched()[0].request, "GPOOL_CUDA_OBJECT_COSTS=context=300M"));
  EXPECT_FALSE(testing::HasEnv(launcher.launched()[0].request, "GPOOL_CUDA_OBJECT_COSTS=none"));
}

// Issue 50: where the interposer was looked for and is missing, a share
// task fails to start with the typed reason (the coordinator puts it on the
// job) and nothing is launched; a whole-GPU task on the same node runs.
TEST_F(TaskManagerShareTest, AShareIsRefusedWhereTheInterposerIsMissing) {
  share_.interposer_missing = dir_.path() + "/lib/gpool/libgpool-cuda.so.1";
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher);
  ASSERT_TRUE(tm->Bind(ShareBind(1)).ok());
  tm->Poll();
  EXPECT_TRUE(launcher.launched().empty());
  const TaskEvent& failed = LastEvent(*tm);
  EXPECT_EQ(failed.kind, TaskEventKind::kFailed);
  EXPECT_EQ(failed.exit_code, 127);
  EXPECT_TRUE(RefusedUnenforceableShare(failed.message)) << failed.message;
  EXPECT_FALSE(fs::exists(CudaDir(1)));

  BindTask whole = testing::OneGpuBind(2);
  ASSERT_TRUE(tm->Bind(whole).ok());
  tm->Poll();
  EXPECT_EQ(launcher.launched().size(), 1u) << "a whole GPU needs no interposer";
}

TEST_F(TaskManagerShareTest, WholeGpuAndMigTasksAreNotInterposed) {
  Interpose();
  mig_mode_ = "dynamic";
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher);
  BindTask whole = ShareBind(2, 0);
  whole.gpu_compute_pct = 0;
  whole.sharing_qos.clear();
  BindTask mig = whole;
  mig.task = TaskId{JobId(3), 0, 0};
  mig.gpu_indices = {2};
  mig.mig_profiles = {"1g.10gb"};
  mig.mig_starts = {0};
  ASSERT_TRUE(tm->Bind(whole).ok());
  ASSERT_TRUE(tm->Bind(mig).ok());
  tm->Poll();
  ASSERT_EQ(launcher.launched().size(), 2u);
  for (const auto& launched : launcher.launched()) {
    EXPECT_TRUE(testing::HasEnv(launched.request, "LD_LIBRARY_PATH=/opt/app/lib"));
    for (const std::string& e : launched.request.env) EXPECT_EQ(e.rfind("GPOOL_CUDA_", 0), std::string::npos) << e;
  }
  EXPECT_FALSE(fs::exists(CudaDir(2)));
  EXPECT_FALSE(fs::exists(CudaDir(3)));
}

TEST_F(TaskManagerShareTest, OptedOutOrHamiCoreTheShareGetsNoPrivateDriver) {
  // --cuda-interposer none: share_.interposer stays empty.
  FakeProcessLauncher none;
  auto tm = Open(&none);
  ASSERT_TRUE(tm->Bind(ShareBind(4)).ok());
  tm->Poll();
  EXPECT_TRUE(testing::HasEnv(none.launched().at(0).request, "LD_LIBRARY_PATH=/opt/app/lib"));
  EXPECT_FALSE(fs::exists(CudaDir(4)));

  Interpose();
  intercept_lib_ = dir_.path() + "/lib/libvgpu.so";
  std::ofstream(intercept_lib_) << "not a library";
  FakeProcessLauncher hami;
  auto tm2 = Open(&hami);
  ASSERT_TRUE(tm2->Bind(ShareBind(5)).ok());
  tm2->Poll();
  const LaunchRequest& request = hami.launched().at(0).request;
  EXPECT_TRUE(testing::HasEnv(request, "LD_PRELOAD=" + intercept_lib_));
  EXPECT_TRUE(testing::HasEnv(request, "LD_LIBRARY_PATH=/opt/app/lib")) << "never both";
  EXPECT_FALSE(fs::exists(CudaDir(5)));
}

TEST_F(TaskManagerShareTest, TheFilesGoWhenTheTaskExitsIsPreemptedOrTimesOut) {
  Interpose();
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher);
  BindTask limited = ShareBind(8);
  limited.max_runtime_ms = 1'000;
  limited.time_limit_grace_ms = 0;
  for (const BindTask& bind : {ShareBind(6), ShareBind(7), limited}) ASSERT_TRUE(tm->Bind(bind).ok());
  tm->Poll();
  ASSERT_EQ(launcher.launched().size(), 3u);
  for (uint64_t job : {6, 7, 8}) {
    ASSERT_TRUE(fs::exists(CudaDir(job))) << job;
    WriteLedger(job);
  }
  launcher.Exit(launcher.launched()[0].pid, 0);
  tm->Preempt(PreemptTask{.task = ShareBind(7).task, .grace_ms = 0, .reason = "job cancelled"});
  clock_.Advance(1'000);
  tm->Poll();  // reaps job 6 and 7, stops job 8 at its time limit
  tm->Poll();  // reaps job 8
  EXPECT_TRUE(tm->Idle());
  for (uint64_t job : {6, 7, 8}) EXPECT_TRUE(Gone(job)) << job;
}

TEST_F(TaskManagerShareTest, TheFilesGoWhenTheStartFails) {
  Interpose();
  FakeProcessLauncher launcher;
  launcher.FailNextLaunch(Status::IoError("exec failed"));
  auto tm = Open(&launcher);
  ASSERT_TRUE(tm->Bind(ShareBind(9)).ok());
  tm->Poll();
  EXPECT_EQ(LastEvent(*tm).kind, TaskEventKind::kFailed);
  EXPECT_TRUE(Gone(9));
}

TEST_F(TaskManagerShareTest, AMissingInterposerDirectoryFailsTheStartRatherThanRunUnenforced) {
  Interpose();
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher);
  // A file where the directory's parent should be: it cannot be made.
  fs::remove_all(dir_.path() + "/tasks");
  std::ofstream(dir_.path() + "/tasks") << "in the way";
  ASSERT_TRUE(tm->Bind(ShareBind(10)).ok());
  tm->Poll();
  EXPECT_TRUE(launcher.launched().empty());
  EXPECT_EQ(LastEvent(*tm).kind, TaskEventKind::kFailed);
  EXPECT_NE(LastEvent(*tm).message.find("CUDA interposer"), std::string::npos) << LastEvent(*tm).message;
}

TEST_F(TaskManagerShareTest, TheFilesGoWhenARestartedWorkerFindsTheTaskEndedOrLost) {
  Interpose();
  std::string ended_dir, lost_dir;
  int64_t ended_pid = 0;
  {
    FakeProcessLauncher first;
    auto tm = Open(&first, /*adopt=*/true);
    ASSERT_TRUE(tm->Bind(ShareBind(11)).ok());
    ASSERT_TRUE(tm->Bind(ShareBind(12)).ok());
    tm->Poll();
    ASSERT_EQ(first.launched().size(), 2u);
    ended_dir = first.launched()[0].request.state_dir;
    ended_pid = first.launched()[0].pid;
    lost_dir = first.launched()[1].request.state_dir;
    WriteLedger(11);
    WriteLedger(12);
  }  // the worker dies; its tasks' files stay
  ASSERT_TRUE(fs::exists(CudaDir(11)));
  FakeProcessLauncher restarted;
  AdoptedProcess ended{.pid = ended_pid, .running = false};
  ended.exit = ExitInfo{.pid = ended_pid, .exit_code = 0};
  restarted.Adoptable(ended_dir, ended);  // job 12: nothing scripted, lost with its supervisor
  auto tm = Open(&restarted, /*adopt=*/true);
  EXPECT_TRUE(Gone(11));
  EXPECT_TRUE(Gone(12));
}

TEST_F(TaskManagerShareTest, ATaskOverItsShareOnTwoSamplesIsKilledAndFailsWithTheReason) {
  Interpose();
  FakeProcessLauncher launcher;
  launcher.IgnoreSignal(SIGTERM);  // only SIGKILL ends it
  auto tm = Open(&launcher);
  ASSERT_TRUE(tm->Bind(ShareBind(13)).ok());
  tm->Poll();
  const int64_t pid = launcher.launched().at(0).pid;
  WriteLedger(13);
  const TaskId id = ShareBind(13).task;
  clock_.Advance(5'000);  // it ran a while (a kill due at monotonic 0 reads as none due)

  tm->EnforceShareMemory({{id, 20480}});
  EXPECT_TRUE(launcher.signals().empty()) << "one sample is not enough";
  tm->EnforceShareMemory({{id, 20480}});
  ASSERT_EQ(launcher.signals().size(), 1u);
  EXPECT_EQ(launcher.signals()[0], std::make_pair(pid, SIGTERM));
  tm->Poll();  // no grace: SIGKILL on the next turn
  ASSERT_EQ(launcher.signals().size(), 2u);
  EXPECT_EQ(launcher.signals()[1], std::make_pair(pid, SIGKILL));
  tm->Poll();  // reaps
  const TaskEvent& exited = LastEvent(*tm);
  EXPECT_EQ(exited.kind, TaskEventKind::kExited) << "not lost: a node fault would be restarted elsewhere";
  EXPECT_EQ(exited.signal, SIGKILL);
  EXPECT_NE(exited.message.find("GPU memory 20480 MiB over its share of 10240 MiB (the interposer was bypassed)"),
            std::string::npos)
      << exited.message;
  EXPECT_TRUE(StoppedOverShare(exited.message)) << exited.message;
  EXPECT_TRUE(Gone(13));
  EXPECT_TRUE(log_.Contains("gpu share overrun")) << log_.text();
}

TEST_F(TaskManagerShareTest, NvmlSeesWhatABypassingProcessAllocates) {
  // The driver's own accounting (the fake NVML) reports the task's process
  // at 12 GiB on its 10 GiB share: what a statically linked program would
  // show, as the heartbeat samples it (Link::SendHeartbeat).
  Interpose();
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher);
  ASSERT_TRUE(tm->Bind(ShareBind(16)).ok());
  tm->Poll();
  const int64_t pid = launcher.launched().at(0).pid;
  testing::ScopedEnv procs("FAKE_NVML_PROCESSES", "1:" + std::to_string(pid) + ":" + std::to_string(12ULL << 30));
  NvmlUsageSamplerOptions options;
  options.library = GPOOL_FAKE_NVML_PATH;
  options.logger = log_.logger();
  auto sampler = NvmlUsageSampler::Open(std::move(options));
  ASSERT_TRUE(sampler.ok()) << sampler.status().ToString();
  testing::TempDir proc;  // no /proc entries: the task's own pid is enough
  clock_.Advance(5'000);
  for (int i = 0; i < 2; ++i) {
    tm->EnforceShareMemory(UsageByTask((*sampler)->Sample(), tm->RunningPids(), ProcStatLookup(proc.path())));
  }
  tm->Poll();
  tm->Poll();
  EXPECT_TRUE(tm->Idle());
  EXPECT_NE(LastEvent(*tm).message.find("GPU memory 12288 MiB over its share of 10240 MiB"), std::string::npos)
      << LastEvent(*tm).message;
}

TEST_F(TaskManagerShareTest, WithinTheToleranceOrForAWholeGpuNothingHappens) {
  Interpose();
  FakeProcessLauncher launcher;
  auto tm = Open(&launcher);
  BindTask whole = ShareBind(15, 0);
  whole.gpu_compute_pct = 0;
  whole.sharing_qos.clear();
  ASSERT_TRUE(tm->Bind(ShareBind(14)).ok());
  ASSERT_TRUE(tm->Bind(whole).ok());
  tm->Poll();
  for (int i = 0; i < 5; ++i) {
    // 5 % of 10240 MiB is 512 MiB: the edge is allowed.
    tm->EnforceShareMemory({{ShareBind(14).task, 10240 + 512}, {whole.task, 80'000}});
    tm->Poll();
  }
  EXPECT_TRUE(launcher.signals().empty());
  EXPECT_EQ(tm->Running().size(), 2u);
}

}  // namespace
}  // namespace gpool::worker
