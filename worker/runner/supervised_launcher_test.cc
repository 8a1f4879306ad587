// PosixProcessLauncher with gpool-task-supervisor (the built binary): tasks
// that outlive the launcher, adoption by a second launcher (a restarted
// worker), a supervisor's death, the shared CPU pool across a restart.
// Waits poll with a deadline.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>

#include <gtest/gtest.h>

#include "topology/cpulist.h"
#include "worker/runner/lease_file.h"
#include "worker/runner/posix_process_launcher.h"
#include "worker/runner/supervisor_state.h"
#include "worker/test_util.h"

namespace gpool::worker::supervised_launcher_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

bool PollUntil(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    poll(nullptr, 0, 5);
  }
  return true;
}

bool ProcessEnded(int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

int64_t ParentOf(int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  std::istringstream rest(text.substr(text.rfind(')') + 2));
  std::string state;
  int64_t ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

class SupervisedLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() == 0) {
      auto tree = CgroupTree::Open("/sys/fs/cgroup", "suplaunch-" + std::to_string(getpid()));
      if (tree.ok()) tree_ = std::move(tree).value();
    }
    launcher_ = NewLauncher();
  }
  void TearDown() override {
    for (int64_t pid : started_) kill(static_cast<pid_t>(pid), SIGKILL);
    // Supervisors end once their task has; wait so none outlives the test.
    for (const auto& dir : dirs_) EXPECT_TRUE(PollUntil([&] { return !SupervisorAlive(dir); })) << dir;
    if (tree_ != nullptr) {
      for (const auto& name : tree_->List()) EXPECT_TRUE(tree_->Adopt(name)->Drain().ok());
    }
  }

  std::unique_ptr<PosixProcessLauncher> NewLauncher(const std::string& lease = "") {
    PosixProcessLauncherOptions options;
    options.logger = log_.logger();
    options.cgroups = tree_.get();
    options.supervisor = GPOOL_TASK_SUPERVISOR_BIN;
    options.lease_path = lease;
    options.liveness_check_ms = 20;
    return std::make_unique<PosixProcessLauncher>(std::move(options));
  }

  Result<int64_t> Launch(PosixProcessLauncher& launcher, const std::string& name, const std::string& script,
                         const CgroupLimits& limits = {}) {
    LaunchRequest request;
    request.limits = limits;
    request.argv = {"/bin/sh", "-c", script};
    request.env = {"PATH=/usr/bin:/bin", "GREETING=hello from env"};
    request.log_path = dir_.path() + "/" + name + ".log";
    request.cgroup = "task-" + name;
    request.state_dir = dir_.path() + "/" + name + ".state";
    dirs_.push_back(request.state_dir);
    auto pid = launcher.Launch(request);
    if (pid.ok()) started_.push_back(*pid);
    return pid;
  }

  static std::optional<ExitInfo> ReapUntil(PosixProcessLauncher& launcher, int64_t pid) {
    std::optional<ExitInfo> found;
    PollUntil([&] {
      for (const auto& exit : launcher.Reap()) {
        if (exit.pid == pid) found = exit;
      }
      return found.has_value();
    });
    return found;
  }

  testing::TempDir dir_;
  testing::CapturedLog log_;
  std::unique_ptr<CgroupTree> tree_;
  std::unique_ptr<PosixProcessLauncher> launcher_;
  std::vector<int64_t> started_;
  std::vector<std::string> dirs_;
};

TEST_F(SupervisedLauncherTest, ATaskRunsUnderItsSupervisorNotTheLauncher) {
  auto pid = Launch(*launcher_, "a", "echo \"$GREETING\"; exec sleep 1000");
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  const int64_t supervisor = ParentOf(*pid);
  EXPECT_NE(supervisor, getpid());
  EXPECT_EQ(ReadStartRecord(dir_.path() + "/a.state")->supervisor_pid, supervisor);
  EXPECT_NE(getsid(static_cast<pid_t>(supervisor)), getsid(0)) << "the supervisor has a session of its own";
  EXPECT_NE(ParentOf(supervisor), getpid()) << "and is not the launcher's child";
  EXPECT_EQ(getpgid(static_cast<pid_t>(*pid)), *pid);
  // Signalled once it has written (a start is reported when the task has
  // exec'd, not when its shell has run the echo: in a Release build the
  // SIGTERM used to arrive first).
  ASSERT_TRUE(PollUntil([&] { return testing::ReadFile(dir_.path() + "/a.log") == "hello from env\n"; }))
      << testing::ReadFile(dir_.path() + "/a.log");
  ASSERT_TRUE(launcher_->Signal(*pid, SIGTERM).ok());
  auto exit = ReapUntil(*launcher_, *pid);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->signal, SIGTERM);
  EXPECT_EQ(exit->reason, "");
  EXPECT_TRUE(launcher_->Reap().empty()) << "each exit is reported once";
  EXPECT_EQ(testing::ReadFile(dir_.path() + "/a.log"), "hello from env\n");
}

// Launches begun together (BeginLaunch) run side by side and each finishes
// (FinishLaunch, in any order) with its own task under its own supervisor.
TEST_F(SupervisedLauncherTest, LaunchesBegunTogetherEachStartTheirOwnTask) {
  std::vector<uint64_t> tickets;
  for (int i = 0; i < 4; ++i) {
    LaunchRequest request;
    request.argv = {"/bin/sh", "-c", "echo " + std::to_string(i) + "; exec sleep 1000"};
    request.env = {"PATH=/usr/bin:/bin"};
    request.log_path = dir_.path() + "/t" + std::to_string(i) + ".log";
    request.cgroup = "task-t" + std::to_string(i);
    request.state_dir = dir_.path() + "/t" + std::to_string(i) + ".state";
    dirs_.push_back(request.state_dir);
    tickets.push_back(launcher_->BeginLaunch(request));
  }
  std::set<int64_t> pids, supervisors;
  for (int i = 3; i >= 0; --i) {
    auto pid = launcher_->FinishLaunch(tickets[i]);
    ASSERT_TRUE(pid.ok()) << pid.status().ToString();
    started_.push_back(*pid);
    pids.insert(*pid);
    EXPECT_EQ(ReadStartRecord(dir_.path() + "/t" + std::to_string(i) + ".state")->pid, *pid);
    supervisors.insert(ParentOf(*pid));
  }
  EXPECT_EQ(pids.size(), 4u);
  EXPECT_EQ(supervisors.size(), 4u);
  EXPECT_EQ(launcher_->FinishLaunch(tickets[0]).status().code(), StatusCode::kNotFound) << "a ticket is finished once";
  for (int64_t pid : pids) {
    ASSERT_TRUE(launcher_->Signal(pid, SIGKILL).ok());
    ASSERT_TRUE(ReapUntil(*launcher_, pid).has_value());
  }
}

TEST_F(SupervisedLauncherTest, AMissingCommandIsNotFoundWithReason) {
  auto pid = Launch(*launcher_, "b", "");
  ASSERT_TRUE(pid.ok());  // sh -c "" runs and exits 0
  ASSERT_TRUE(ReapUntil(*launcher_, *pid).has_value());
  LaunchRequest request;
  request.argv = {"gpool-no-such-command-xyz"};
  request.log_path = dir_.path() + "/c.log";
  request.state_dir = dir_.path() + "/c.state";
  dirs_.push_back(request.state_dir);
  auto missing = launcher_->Launch(request);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(testing::ReadFile(request.log_path).find("cannot run 'gpool-no-such-command-xyz'"), std::string::npos);
}

TEST_F(SupervisedLauncherTest, ASecondLauncherAdoptsARunningTaskAndSeesItsEnd) {
  auto pid = Launch(*launcher_, "d", "exec sleep 1000");
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  launcher_.reset();  // the worker is gone
  EXPECT_FALSE(ProcessEnded(*pid));

  auto restarted = NewLauncher();
  auto adopted = restarted->Adopt(dir_.path() + "/d.state");
  ASSERT_TRUE(adopted.ok()) << adopted.status().ToString();
  EXPECT_TRUE(adopted->running);
  EXPECT_EQ(adopted->pid, *pid);
  EXPECT_TRUE(restarted->Reap().empty());
  ASSERT_TRUE(restarted->Signal(*pid, SIGKILL).ok());
  auto exit = ReapUntil(*restarted, *pid);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->signal, SIGKILL);
}

// What a process may run on now ("0-3"), from its /proc status.
std::string CpusAllowed(int64_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) == 0) return line.substr(line.find('\t') + 1);
  }
  return "";
}

// The shared pool (shared_cpu_pool.h) across a worker restart: an adopted
// exclusive task keeps its core out of the pool; a shared task the
// restarted worker starts (its cpuset made by its supervisor, from the
// pool in its launch spec) is off that core, and gets it back once the
// exclusive task is reaped.
TEST_F(SupervisedLauncherTest, AnAdoptedExclusiveTaskKeepsItsCoreOutOfTheSharedPool) {
  if (tree_ == nullptr || !tree_->cpuset_available()) GTEST_SKIP() << "needs root and cpusets";
  auto allowed = tree_->AllowedCpus();
  ASSERT_TRUE(allowed.ok()) << allowed.status().ToString();
  if (allowed->size() < 2) GTEST_SKIP() << "needs two CPUs";
  const uint32_t core = allowed->front();
  const std::vector<uint32_t> rest(allowed->begin() + 1, allowed->end());
  auto pinned = Launch(*launcher_, "pinned", "exec sleep 1000", CgroupLimits{.cpuset_cpus = {core}});
  ASSERT_TRUE(pinned.ok()) << pinned.status().ToString();
  EXPECT_EQ(CpusAllowed(*pinned), std::to_string(core));
  launcher_.reset();  // the worker is gone

  auto restarted = NewLauncher();
  ASSERT_NE(restarted->shared_cpu_pool(), nullptr);
  EXPECT_EQ(restarted->shared_cpu_pool()->Cpus(), *allowed) << "nothing adopted yet";
  auto adopted = restarted->Adopt(dir_.path() + "/pinned.state");
  ASSERT_TRUE(adopted.ok() && adopted->running) << adopted.status().ToString();
  EXPECT_TRUE(restarted->shared_cpu_pool()->Holds("task-pinned"));
  EXPECT_EQ(restarted->shared_cpu_pool()->Cpus(), rest);

  auto shared = Launch(*restarted, "shared", "exec sleep 1000");
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  EXPECT_EQ(CpusAllowed(*shared), topology::FormatCpuList(rest)) << log_.text();
  EXPECT_TRUE(restarted->shared_cpu_pool()->Keeps("task-shared"));

  ASSERT_TRUE(restarted->Signal(*pinned, SIGKILL).ok());
  ASSERT_TRUE(ReapUntil(*restarted, *pinned).has_value());
  EXPECT_FALSE(restarted->shared_cpu_pool()->Holds("task-pinned"));
  EXPECT_EQ(CpusAllowed(*shared), topology::FormatCpuList(*allowed)) << "widened once its core is free";
  ASSERT_TRUE(restarted->Signal(*shared, SIGKILL).ok());
  ASSERT_TRUE(ReapUntil(*restarted, *shared).has_value());
  EXPECT_FALSE(restarted->shared_cpu_pool()->Keeps("task-shared"));
}

TEST_F(SupervisedLauncherTest, AnEndWhileNoLauncherWatchedIsFoundByAdopt) {
  auto pid = Launch(*launcher_, "e", "exit 4");
  ASSERT_TRUE(pid.ok());
  launcher_.reset();
  ASSERT_TRUE(PollUntil([&] { return ReadExitRecord(dir_.path() + "/e.state").ok(); }));
  auto restarted = NewLauncher();
  auto adopted = restarted->Adopt(dir_.path() + "/e.state");
  ASSERT_TRUE(adopted.ok());
  EXPECT_FALSE(adopted->running);
  EXPECT_EQ(adopted->pid, *pid);
  EXPECT_EQ(adopted->exit.exit_code, 4);
  EXPECT_TRUE(restarted->Reap().empty()) << "an ended task is not tracked";
}

TEST_F(SupervisedLauncherTest, ATaskWhoseSupervisorDiesIsReportedLostAndNothingOfItRuns) {
  const std::string child = dir_.path() + "/child.pid";
  auto pid = Launch(*launcher_, "f", "sleep 1000 & echo $! > " + child + "; exec sleep 1000");
  ASSERT_TRUE(pid.ok());
  int64_t background = 0;
  ASSERT_TRUE(PollUntil([&] { return static_cast<bool>(std::ifstream(child) >> background); }));
  started_.push_back(background);
  const int64_t supervisor = ReadStartRecord(dir_.path() + "/f.state")->supervisor_pid;
  ASSERT_EQ(kill(static_cast<pid_t>(supervisor), SIGKILL), 0);
  auto exit = ReapUntil(*launcher_, *pid);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 255);
  EXPECT_NE(exit->reason.find("lost with its supervisor"), std::string::npos) << exit->reason;
  EXPECT_TRUE(PollUntil([&] { return ProcessEnded(*pid); })) << "the first process dies with its supervisor";
  if (tree_ != nullptr) {
    EXPECT_TRUE(ProcessEnded(background)) << "the rest is killed through the cgroup";
  }
  // A restarted worker finds the same end recorded.
  auto restarted = NewLauncher();
  auto adopted = restarted->Adopt(dir_.path() + "/f.state");
  ASSERT_TRUE(adopted.ok());
  EXPECT_FALSE(adopted->running);
  EXPECT_EQ(adopted->exit.exit_code, 255);
}

TEST_F(SupervisedLauncherTest, NoLeaseNoStart) {
  auto leased = NewLauncher(LeasePath(dir_.path()));
  auto refused = Launch(*leased, "g", "exec sleep 1000");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(WriteLease(LeasePath(dir_.path()), MonotonicNowMs() + 60'000).ok());
  auto pid = Launch(*leased, "h", "exit 0");
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  ASSERT_TRUE(ReapUntil(*leased, *pid).has_value());
}

TEST_F(SupervisedLauncherTest, AnExpiredLeaseEndsTheTaskWithThatReason) {
  const std::string lease = LeasePath(dir_.path());
  ASSERT_TRUE(WriteLease(lease, MonotonicNowMs() + 60'000).ok());
  auto leased = NewLauncher(lease);
  auto pid = Launch(*leased, "i", "exec sleep 1000");
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  ASSERT_TRUE(WriteLease(lease, MonotonicNowMs()).ok());
  auto exit = ReapUntil(*leased, *pid);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_EQ(exit->reason.rfind("node lease expired", 0), 0u) << exit->reason;
}

}  // namespace
}  // namespace gpool::worker::supervised_launcher_test
