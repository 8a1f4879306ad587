// Real child processes. Exits are awaited by polling Reap with a bounded
// deadline (the one place the worker's tests wait on the OS).
#include "worker/runner/posix_process_launcher.h"

#include <poll.h>
#include <sched.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "protocol/base/clock.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_manager.h"
#include "worker/runner/task_usage.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

std::vector<std::string> TestEnv() { return {"PATH=/usr/bin:/bin", "GREETING=hello from env"}; }

// Polls Reap until `pid` has exited or 10 s pass.
std::optional<ExitInfo> WaitForExit(PosixProcessLauncher& launcher, int64_t pid) {
  const int64_t deadline = SystemClock::Get().MonoMs() + 10'000;
  while (SystemClock::Get().MonoMs() < deadline) {
    for (const ExitInfo& exit : launcher.Reap()) {
      if (exit.pid == pid) return exit;
    }
    poll(nullptr, 0, 5);
  }
  return std::nullopt;
}

TEST(PosixProcessLauncherTest, RunsCommandWithLogAndExitCode) {
  testing::TempDir dir;
  PosixProcessLauncher launcher;
  const std::string log = dir.path() + "/t.log";
  auto pid = launcher.Launch({{"sh", "-c", "echo hello; echo oops >&2; echo \"$GREETING\"; exit 3"}, TestEnv(), log});
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  auto exit = WaitForExit(launcher, *pid);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_EQ(exit->signal, 0);
  EXPECT_EQ(testing::ReadFile(log), "hello\noops\nhello from env\n");
  EXPECT_TRUE(launcher.Reap().empty()) << "each exit is reported once";
}

TEST(PosixProcessLauncherTest, ChildIsItsOwnProcessGroupWithoutInheritedFds) {
  testing::TempDir dir;
  PosixProcessLauncher launcher;
  const std::string log = dir.path() + "/t.log";
  // Prints the child's pgid and the fds it has open (0, 1, 2 and the one ls uses).
  auto pid = launcher.Launch({{"sh", "-c", "cut -d' ' -f5 /proc/$$/stat; ls /proc/self/fd"}, TestEnv(), log});
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  ASSERT_TRUE(WaitForExit(launcher, *pid).has_value());
  std::istringstream out(testing::ReadFile(log));
  int64_t pgid = 0;
  out >> pgid;
  EXPECT_EQ(pgid, *pid);
  std::vector<int> fds;
  for (int fd; out >> fd;) fds.push_back(fd);
  EXPECT_LE(fds.size(), 4u) << testing::ReadFile(log);
}


// The launcher's process groups are what task_usage.h relies on: a task's
// child is found by its group, a child that left with setsid by its parent;
// this process (the "worker") belongs to no task.
TEST(PosixProcessLauncherTest, TaskProcessesAreAttributedToTheTask) {
  testing::TempDir dir;
  PosixProcessLauncher launcher;
  const std::string kids = dir.path() + "/kids";
  auto pid = launcher.Launch({{"sh", "-c", "sleep 30 & echo $! > " + kids + "; setsid sleep 30 & echo $! >> " + kids +
                                               "; wait"},
                              TestEnv(), dir.path() + "/t.log"});
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  int64_t in_group = 0;
  int64_t own_session = 0;
  const int64_t deadline = SystemClock::Get().MonoMs() + 10'000;
  while (SystemClock::Get().MonoMs() < deadline) {
    std::istringstream in(testing::ReadFile(kids));
    if (in >> in_group >> own_session) {
      auto stat = ReadProcStat("/proc", own_session);
      if (stat && stat->pgrp == own_session) break;  // setsid has run
    }
    poll(nullptr, 0, 5);
  }
  ASSERT_NE(own_session, 0);
  EXPECT_EQ(ReadProcStat("/proc", in_group).value_or(ProcStat{}).pgrp, *pid);
  EXPECT_NE(ReadProcStat("/proc", own_session).value_or(ProcStat{}).pgrp, *pid);

  const TaskId task{JobId(5), 0, 0};
  auto usage = UsageByTask({{in_group, 10}, {own_session, 20}, {getpid(), 40}}, {{*pid, task}},
                           ProcStatLookup("/proc"));
  EXPECT_EQ(usage, (std::vector<TaskUsage>{{task, 30}}));

  kill(static_cast<pid_t>(own_session), SIGKILL);  // outside the group the launcher kills
  ASSERT_TRUE(launcher.Signal(*pid, SIGKILL).ok());
  ASSERT_TRUE(WaitForExit(launcher, *pid).has_value());
}

TEST(PosixProcessLauncherTest, SignalStopsTheWholeGroup) {
  testing::TempDir dir;
  PosixProcessLauncher launcher;
  const std::string log = dir.path() + "/t.log";
  auto pid = launcher.Launch({{"sleep", "30"}, TestEnv(), log});
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  ASSERT_TRUE(launcher.Signal(*pid, SIGTERM).ok());
  auto exit = WaitForExit(launcher, *pid);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->signal, SIGTERM);
  EXPECT_EQ(exit->exit_code, 128 + SIGTERM);
  EXPECT_EQ(launcher.Signal(*pid, SIGKILL).code(), StatusCode::kNotFound) << "reaped pids are never signalled";
}

TEST(PosixProcessLauncherTest, MissingCommandIsNotFoundWithReason) {
  testing::TempDir dir;
  PosixProcessLauncher launcher;
  const std::string log = dir.path() + "/t.log";
  auto pid = launcher.Launch({{"gpool-no-such-command-xyz"}, TestEnv(), log});
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), StatusCode::kNotFound);
  EXPECT_NE(pid.status().message().find("No such file or directory"), std::string::npos) << pid.status().message();
  EXPECT_NE(testing::ReadFile(log).find("cannot run 'gpool-no-such-command-xyz'"), std::string::npos);
  EXPECT_TRUE(launcher.Reap().empty()) << "the failed child was already collected";
}

TEST(PosixProcessLauncherTest, UnwritableLogIsAnError) {
  PosixProcessLauncher launcher;
  auto pid = launcher.Launch({{"true"}, TestEnv(), "/nonexistent-dir/t.log"});
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), StatusCode::kIoError);
}

bool Cpu0Usable() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_ISSET(0, &set);
}

TEST(PosixProcessLauncherTest, SingleNumaNodeBindsCpusAndMemory) {
  if (!Cpu0Usable()) GTEST_SKIP() << "CPU 0 is not usable by this test process";
  testing::TempDir dir;
  testing::CapturedLog log;
  PosixProcessLauncher launcher(log.logger());
  const std::string path = dir.path() + "/t.log";
  NumaPinning numa;
  numa.cpus = {0};
  numa.nodes = {0};
  numa.strict = true;
  auto pid = launcher.Launch(
      {{"sh", "-c", "grep Cpus_allowed_list /proc/self/status; head -1 /proc/self/numa_maps"}, TestEnv(), path, numa});
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  ASSERT_TRUE(WaitForExit(launcher, *pid).has_value());
  const std::string out = testing::ReadFile(path);
  EXPECT_NE(out.find("Cpus_allowed_list:\t0\n"), std::string::npos) << out;
  // Hosts whose seccomp profile refuses set_mempolicy run the task without
  // the memory policy, and say so in the worker's log and the task's.
  if (std::filesystem::exists("/proc/self/numa_maps") && !log.Contains("numa pinning failed")) {
    EXPECT_NE(out.find(" bind:0 "), std::string::npos) << out;
  } else {
    EXPECT_NE(out.find("gpool-worker: could not set memory policy"), std::string::npos) << out << log.text();
  }
}

TEST(PosixProcessLauncherTest, PinningToCpusAbsentHereRunsUnpinned) {
  testing::TempDir dir;
  testing::CapturedLog log;
  PosixProcessLauncher launcher(log.logger());
  const std::string path = dir.path() + "/t.log";
  NumaPinning numa;
  numa.cpus = {60000};  // a simulated node's CPU
  numa.nodes = {3000};
  numa.strict = true;
  auto pid = launcher.Launch({{"sh", "-c", "echo ran"}, TestEnv(), path, numa});
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  auto exit = WaitForExit(launcher, *pid);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(testing::ReadFile(path), "ran\n");
  EXPECT_TRUE(log.Contains("the task is not pinned")) << log.text();
}

// A task of a best-effort NUMA job through the TaskManager: its GPU is on
// NUMA node 0, whose spec lists CPU 0, so the child runs on CPU 0 only.
TEST(PosixProcessLauncherTest, TaskOfNumaJobRunsOnItsGpusNumaNode) {
  if (!Cpu0Usable()) GTEST_SKIP() << "CPU 0 is not usable by this test process";
  testing::TempDir dir;
  testing::CapturedLog log;
  PosixProcessLauncher launcher(log.logger());
  TaskManagerOptions options;
  options.node.name = "pin";
  options.node.cpu_milli = 1000;
  options.node.memory_mib = 1024;
  options.node.numa = {{0, 1000, 1024, "0"}};
  GpuInfo gpu;
  gpu.uuid = "GPU-pin-0";
  gpu.numa = 0;
  options.node.gpus = {gpu};
  options.log_dir = dir.path() + "/tasks";
  options.base_env = {{"PATH", "/usr/bin:/bin"}};
  options.launcher = &launcher;
  options.clock = &SystemClock::Get();
  options.logger = log.logger();
  auto tm = std::move(TaskManager::Open(std::move(options)).value());
  BindTask bind;
  bind.task = TaskId{JobId(9), 0, 0};
  bind.command = {"sh", "-c", "grep Cpus_allowed_list /proc/self/status"};
  bind.gpu_indices = {0};
  bind.numa_policy = "best-effort";
  ASSERT_TRUE(tm->Bind(bind).ok());
  const int64_t deadline = SystemClock::Get().MonoMs() + 10'000;
  bool exited = false;
  while (!exited && SystemClock::Get().MonoMs() < deadline) {
    tm->Poll();
    for (const auto& [seq, event] : tm->Outbox()) exited = exited || event.kind == TaskEventKind::kExited;
    poll(nullptr, 0, 5);
  }
  ASSERT_TRUE(exited) << log.text();
  const std::string out = testing::ReadFile(dir.path() + "/tasks/9.0.0.log");
  EXPECT_EQ(out.rfind("Cpus_allowed_list:\t0\n", 0), 0u) << out << log.text();
  EXPECT_TRUE(log.Contains("numa_cpus=0")) << log.text();
}

// The TaskManager over real processes: the three scenarios of the brief.
class RealTaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_.name = "real";
    node_.cpu_milli = 1000;
    node_.memory_mib = 1024;
    TaskManagerOptions options;
    options.node = node_;
    options.log_dir = dir_.path() + "/tasks";
    options.base_env = {{"PATH", "/usr/bin:/bin"}};
    options.launcher = &launcher_;
    options.clock = &SystemClock::Get();
    options.logger = log_.logger();
    tm_ = std::move(TaskManager::Open(std::move(options)).value());
  }

  BindTask MakeBind(uint64_t job, std::vector<std::string> command) {
    BindTask bind;
    bind.task = TaskId{JobId(job), 0, 0};
    bind.command = std::move(command);
    return bind;
  }

  // Polls until an event of `kind` for `job` is in the outbox, up to 10 s.
  std::optional<TaskEvent> WaitForEvent(uint64_t job, TaskEventKind kind) {
    const int64_t deadline = SystemClock::Get().MonoMs() + 10'000;
    while (SystemClock::Get().MonoMs() < deadline) {
      tm_->Poll();
      for (const auto& [seq, event] : tm_->Outbox()) {
        if (event.task.job.value() == job && event.kind == kind) return event;
      }
      poll(nullptr, 0, 5);
    }
    return std::nullopt;
  }

  NodeSpec node_;
  testing::TempDir dir_;
  testing::CapturedLog log_;
  PosixProcessLauncher launcher_;
  std::unique_ptr<TaskManager> tm_;
};

TEST_F(RealTaskTest, EchoAndExitThree) {
  ASSERT_TRUE(tm_->Bind(MakeBind(1, {"sh", "-c", "echo hello; exit 3"})).ok());
  auto started = WaitForEvent(1, TaskEventKind::kStarted);
  ASSERT_TRUE(started.has_value());
  EXPECT_GT(started->pid, 0);
  auto exited = WaitForEvent(1, TaskEventKind::kExited);
  ASSERT_TRUE(exited.has_value()) << log_.text();
  EXPECT_EQ(exited->exit_code, 3);
  EXPECT_EQ(exited->signal, 0);
  EXPECT_EQ(testing::ReadFile(dir_.path() + "/tasks/1.0.0.log"), "hello\n");
  auto log = tm_->TailLog(TaskId{JobId(1), 0, 0}, 1024);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->data, "hello\n");
}

TEST_F(RealTaskTest, SleepPreemptedExitsBySigterm) {
  ASSERT_TRUE(tm_->Bind(MakeBind(2, {"sleep", "30"})).ok());
  ASSERT_TRUE(WaitForEvent(2, TaskEventKind::kStarted).has_value());
  PreemptTask preempt;
  preempt.task = TaskId{JobId(2), 0, 0};
  preempt.grace_ms = 10'000;
  tm_->Preempt(preempt);
  auto exited = WaitForEvent(2, TaskEventKind::kExited);
  ASSERT_TRUE(exited.has_value()) << log_.text();
  EXPECT_EQ(exited->signal, SIGTERM);
  EXPECT_EQ(exited->exit_code, 128 + SIGTERM);
  EXPECT_EQ(tm_->Reports().back().state, TaskState::kCancelled);
}

TEST_F(RealTaskTest, TrappedSigtermIsKilledAfterGrace) {
  // The shell ignores SIGTERM; the preempt's 50 ms grace ends in SIGKILL.
  ASSERT_TRUE(tm_->Bind(MakeBind(3, {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.01; done"})).ok());
  ASSERT_TRUE(WaitForEvent(3, TaskEventKind::kStarted).has_value());
  const int64_t deadline = SystemClock::Get().MonoMs() + 10'000;
  while (testing::ReadFile(dir_.path() + "/tasks/3.0.0.log").find("ready") == std::string::npos &&
         SystemClock::Get().MonoMs() < deadline) {
    poll(nullptr, 0, 5);  // until the trap is installed
  }
  PreemptTask preempt;
  preempt.task = TaskId{JobId(3), 0, 0};
  preempt.grace_ms = 50;
  tm_->Preempt(preempt);
  auto exited = WaitForEvent(3, TaskEventKind::kExited);
  ASSERT_TRUE(exited.has_value()) << log_.text();
  EXPECT_EQ(exited->signal, SIGKILL);
}

TEST_F(RealTaskTest, NonexistentCommandFailsWith127) {
  ASSERT_TRUE(tm_->Bind(MakeBind(4, {"gpool-no-such-command-xyz", "arg"})).ok());
  auto failed = WaitForEvent(4, TaskEventKind::kFailed);
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->exit_code, 127);
  EXPECT_NE(failed->message.find("No such file or directory"), std::string::npos) << failed->message;
  EXPECT_TRUE(tm_->Idle());
}

}  // namespace
}  // namespace gpool::worker
