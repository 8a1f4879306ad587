// Exclusive whole cores as cpusets (task_cgroup.h): the files and values in
// each layout, how the levels above the tasks are prepared (fake roots),
// the refusal where no cpuset can be made, and on this machine's v1 cpuset
// (as root) that a task sees exactly its cores in /proc/self/status and
// cannot widen them with sched_setaffinity, and that tasks without
// exclusive cores stay off them (the shared pool, shared_cpu_pool.h).
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "topology/cpulist.h"
#include "worker/runner/posix_process_launcher.h"
#include "worker/runner/task_cgroup.h"
#include "worker/runner/testing/allowed_cpus.h"
#include "worker/runner/testing/fake_cgroup_root.h"

namespace gpool::worker {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using FileValues = std::vector<std::pair<std::string, std::string>>;


TEST(CpusetLimitFilesTest, ExclusiveCoresBecomeCpusetFilesInEachLayout) {
  CgroupLimits limits;
  limits.cpuset_cpus = {5, 2, 3, 4, 9};
  limits.cpuset_mems = "1";
  EXPECT_EQ(CgroupLimitFiles(CgroupLayout::kV2, limits),
            (FileValues{{"cpuset.cpus", "2-5,9"}, {"cpuset.mems", "1"}}));
  EXPECT_EQ(CgroupLimitFiles(CgroupLayout::kV1, limits),
            (FileValues{{"cpuset/cpuset.cpus", "2-5,9"}, {"cpuset/cpuset.mems", "1"}}));
  limits.cpuset_mems.clear();
  EXPECT_EQ(CgroupLimitFiles(CgroupLayout::kV2, limits), (FileValues{{"cpuset.cpus", "2-5,9"}}))
      << "no mems: the parent's apply";
  // The CPU quota stays beside the cpuset: both are written.
  limits.cpu_milli = 2000;
  EXPECT_EQ(CgroupLimitFiles(CgroupLayout::kV1, limits),
            (FileValues{{"cpu/cpu.cfs_period_us", "100000"},
                        {"cpu/cpu.cfs_quota_us", "200000"},
                        {"cpuset/cpuset.cpus", "2-5,9"}}));
}

class CpusetFakeRoot : public FakeCgroupRoot {};

TEST_F(CpusetFakeRoot, V1LevelsAboveTheTasksTakeTheirParentsCpusAndMems) {
  Write(root_ / "unified/cgroup.controllers", "");
  Write(root_ / "freezer/cgroup.procs", "");
  Write(root_ / "cpuset/cgroup.procs", "");
  Write(root_ / "cpuset/cpuset.cpus", "0-7\n");
  Write(root_ / "cpuset/cpuset.mems", "0-1\n");
  // As the kernel makes them: empty cpus and mems in each new level.
  Write(root_ / "cpuset/gpool/cpuset.cpus", "");
  Write(root_ / "cpuset/gpool/cpuset.mems", "");
  Write(root_ / "cpuset/gpool/node-1/cpuset.cpus", "");
  Write(root_ / "cpuset/gpool/node-1/cpuset.mems", "");
  auto tree = CgroupTree::Open(root_.string(), "node-1");
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  EXPECT_TRUE((*tree)->cpuset_available()) << (*tree)->cpuset_why_not();
  EXPECT_EQ(ReadCgroupFile(root_ / "cpuset/gpool/cpuset.cpus"), "0-7");
  EXPECT_EQ(ReadCgroupFile(root_ / "cpuset/gpool/node-1/cpuset.cpus"), "0-7");
  EXPECT_EQ(ReadCgroupFile(root_ / "cpuset/gpool/node-1/cpuset.mems"), "0-1");
  EXPECT_NE((*tree)->Describe().find("cpuset"), std::string::npos) << (*tree)->Describe();
}

TEST_F(CpusetFakeRoot, V1WithoutACpusetHierarchyRefusesExclusiveCoresAndCreatesNothing) {
  Write(root_ / "unified/cgroup.controllers", "");
  Write(root_ / "freezer/cgroup.procs", "");
  auto tree = CgroupTree::Open(root_.string(), "node-1");
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  EXPECT_FALSE((*tree)->cpuset_available());
  CgroupLimits limits;
  limits.cpuset_cpus = {2, 3};
  auto made = (*tree)->Create("task-1.0.0", limits);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(made.status().message().find("exclusive cores 2-3 cannot be enforced"), std::string::npos)
      << made.status().ToString();
  EXPECT_NE(made.status().message().find("cpuset"), std::string::npos) << made.status().ToString();
  EXPECT_FALSE(fs::exists(root_ / "freezer/gpool/node-1/task-1.0.0")) << "a refusal leaves nothing behind";
}

TEST_F(CpusetFakeRoot, V2EnablesCpusetDownToTheTasksParent) {
  Write(root_ / "cgroup.controllers", "cpuset cpu io memory pids\n");
  Write(root_ / "cgroup.subtree_control", "");
  Write(root_ / "gpool/cgroup.subtree_control", "");
  Write(root_ / "gpool/node-1/cgroup.subtree_control", "");
  auto tree = CgroupTree::Open(root_.string(), "node-1");
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  ASSERT_EQ((*tree)->layout(), CgroupLayout::kV2);
  EXPECT_TRUE((*tree)->cpuset_available()) << (*tree)->cpuset_why_not();
  EXPECT_NE(ReadCgroupFile(root_ / "gpool/node-1/cgroup.subtree_control").find("+cpuset"), std::string::npos);
}

TEST_F(CpusetFakeRoot, V2WhereCpusetCannotBeEnabledRefusesExclusiveCores) {
  // No subtree_control files below the root: the kernel's refusal to
  // enable a controller the level lacks, as a fake root shows it.
  Write(root_ / "cgroup.controllers", "cpu io memory pids\n");
  Write(root_ / "cgroup.subtree_control", "");
  auto tree = CgroupTree::Open(root_.string(), "node-1");
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  ASSERT_EQ((*tree)->layout(), CgroupLayout::kV2);
  EXPECT_FALSE((*tree)->cpuset_available());
  CgroupLimits limits;
  limits.cpuset_cpus = {1};
  auto made = (*tree)->Create("task-1.0.0", limits);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), StatusCode::kFailedPrecondition) << made.status().ToString();
  EXPECT_FALSE(fs::exists(root_ / "gpool/node-1/task-1.0.0"));
}

TEST(CpusetLauncherTest, WithoutCgroupsExclusiveCoresAreRefusedUnlessTheFallbackIsAllowed) {
  PosixProcessLauncher launcher(nullptr, nullptr);
  const fs::path log = fs::temp_directory_path() / ("gpool-cpuset-nocg-" + std::to_string(getpid()) + ".log");
  LaunchRequest request;
  request.argv = {"/bin/true"};
  request.env = {"PATH=/usr/bin:/bin"};
  request.log_path = log.string();
  request.cgroup = "task-1.0.0";
  request.limits.cpuset_cpus = {0};
  auto refused = launcher.Launch(request);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("task cgroups are off"), std::string::npos)
      << refused.status().ToString();

  request.limits.cpuset_required = false;  // --exclusive-cores-fallback=affinity
  request.numa.cpus = {0};
  auto started = launcher.Launch(request);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  bool reaped = false;
  while (!reaped && std::chrono::steady_clock::now() < deadline) {
    for (const auto& exit : launcher.Reap()) reaped = reaped || exit.pid == *started;
    if (!reaped) std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(reaped);
  fs::remove(log);
}

// This machine's cgroups (v1 with a cpuset hierarchy, or v2 with the cpuset
// controller) as root, with two CPUs this process may use; else skipped.
class CpusetRealCgroups : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "cgroups need root";
    auto tree = CgroupTree::Open("/sys/fs/cgroup", "cpuset-test-" + std::to_string(getpid()));
    if (!tree.ok()) GTEST_SKIP() << tree.status().ToString();
    if (!(*tree)->cpuset_available()) GTEST_SKIP() << (*tree)->cpuset_why_not();
    cpus_ = worker::FirstAllowedCpus(2);
    if (cpus_.size() < 2) GTEST_SKIP() << "needs two CPUs";
    tree_ = std::move(tree).value();
    dir_ = fs::temp_directory_path() / ("gpool-cpuset-real-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    launcher_ = std::make_unique<PosixProcessLauncher>(nullptr, tree_.get());
  }
  void TearDown() override {
    if (tree_ == nullptr) return;
    for (const auto& name : tree_->List()) EXPECT_TRUE(tree_->Adopt(name)->Drain().ok());
    launcher_.reset();
    tree_.reset();
    fs::remove_all(dir_);
  }
  static bool WaitFor(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(5ms);
    }
    return true;
  }
  // `cpus`: its exclusive cores; empty: a shared task (the pool's).
  int64_t Launch(const std::string& name, const std::string& script, std::vector<uint32_t> cpus) {
    LaunchRequest request;
    request.argv = {"/bin/sh", "-c", script};
    request.env = {"PATH=/usr/bin:/bin"};
    request.log_path = (dir_ / (name + ".log")).string();
    request.cgroup = name;
    request.limits.cpuset_cpus = std::move(cpus);
    auto pid = launcher_->Launch(request);
    EXPECT_TRUE(pid.ok()) << pid.status().ToString();
    return pid.ok() ? *pid : -1;
  }
  // What the task wrote to `file` once it says "done" on the last line.
  std::string Report(const std::string& file) {
    std::string text;
    WaitFor([&] {
      text = ReadCgroupFile(dir_ / file);
      return text.size() >= 4 && text.compare(text.size() - 4, 4, "done") == 0;
    });
    return text;
  }
  // The CPUs a task last wrote to `file` (a Cpus_allowed_list line), "" before it has.
  std::string AllowedIn(const std::string& file) {
    const std::string text = ReadCgroupFile(dir_ / file);
    const size_t tab = text.find('\t');
    return text.rfind("Cpus_allowed_list:", 0) == 0 && tab != std::string::npos ? text.substr(tab + 1) : "";
  }
  void KillAndReap(int64_t pid) {
    ASSERT_TRUE(launcher_->Signal(pid, SIGKILL).ok());
    EXPECT_TRUE(WaitFor([&] {
      for (const auto& exit : launcher_->Reap()) {
        if (exit.pid == pid) return true;
      }
      return false;
    }));
  }
  std::unique_ptr<CgroupTree> tree_;
  std::unique_ptr<PosixProcessLauncher> launcher_;
  fs::path dir_;
  std::vector<uint32_t> cpus_;
};

TEST_F(CpusetRealCgroups, TwoTasksSeeOnlyTheirOwnCoresAndCannotWidenThem) {
  // Each reports what it may run on, tries to widen it to both CPUs (as a
  // task could with sched_setaffinity), and reports again.
  const std::string both = std::to_string(cpus_[0]) + "," + std::to_string(cpus_[1]);
  auto script = [&](const std::string& out) {
    const std::string file = (dir_ / out).string();
    return "grep Cpus_allowed_list /proc/self/status > " + file + "; taskset -p -c " + both +
           " $$ > /dev/null 2>&1; grep Cpus_allowed_list /proc/self/status >> " + file + "; echo done >> " + file +
           "; exec sleep 1000";
  };
  const int64_t a = Launch("task-a", script("a.out"), {cpus_[0]});
  const int64_t b = Launch("task-b", script("b.out"), {cpus_[1]});
  const std::string seen_a = Report("a.out");
  const std::string seen_b = Report("b.out");
  const std::string line_a = "Cpus_allowed_list:\t" + std::to_string(cpus_[0]);
  const std::string line_b = "Cpus_allowed_list:\t" + std::to_string(cpus_[1]);
  EXPECT_EQ(seen_a, line_a + "\n" + line_a + "\ndone");
  EXPECT_EQ(seen_b, line_b + "\n" + line_b + "\ndone");
  KillAndReap(a);
  KillAndReap(b);
}

// The shared pool (shared_cpu_pool.h) on this machine's cpusets: a task
// without exclusive cores is narrowed off the cores an exclusive task takes
// as that one starts, starts narrowed while they are held, and is widened
// again when they are free; never an empty cpuset.
TEST_F(CpusetRealCgroups, SharedTasksStayOffExclusiveCoresAndGetThemBack) {
  auto allowed = tree_->AllowedCpus();
  ASSERT_TRUE(allowed.ok()) << allowed.status().ToString();
  auto pool_without = [&](const std::vector<uint32_t>& held) {
    std::vector<uint32_t> rest;
    for (uint32_t cpu : *allowed) {
      if (std::find(held.begin(), held.end(), cpu) == held.end()) rest.push_back(cpu);
    }
    return topology::FormatCpuList(rest.empty() ? *allowed : rest);  // empty: all of them instead
  };
  // Writes what it may run on ten times a second, whole (by rename).
  const std::string now = (dir_ / "shared.now").string();
  const int64_t shared = Launch("shared", "while :; do grep Cpus_allowed_list /proc/self/status > " + now +
                                              ".tmp; mv " + now + ".tmp " + now + "; sleep 0.1; done",
                                {});
  auto sees = [&](const std::string& cpus) { return WaitFor([&] { return AllowedIn("shared.now") == cpus; }); };
  EXPECT_TRUE(sees(topology::FormatCpuList(*allowed))) << AllowedIn("shared.now");

  const int64_t a = Launch("pinned-a", "exec sleep 1000", {cpus_[0]});
  EXPECT_TRUE(sees(pool_without({cpus_[0]}))) << "narrowed when an exclusive task started: " << AllowedIn("shared.now");
  const int64_t late = Launch("late", "grep Cpus_allowed_list /proc/self/status > " + (dir_ / "late.now").string() +
                                          "; exec sleep 1000",
                              {});
  EXPECT_TRUE(WaitFor([&] { return !AllowedIn("late.now").empty(); }));
  EXPECT_EQ(AllowedIn("late.now"), pool_without({cpus_[0]})) << "a shared task starts on the pool";

  const int64_t b = Launch("pinned-b", "exec sleep 1000", {cpus_[1]});
  EXPECT_TRUE(sees(pool_without({cpus_[0], cpus_[1]}))) << AllowedIn("shared.now");
  KillAndReap(a);
  EXPECT_TRUE(sees(pool_without({cpus_[1]}))) << "widened when one ended: " << AllowedIn("shared.now");
  KillAndReap(b);
  EXPECT_TRUE(sees(topology::FormatCpuList(*allowed))) << AllowedIn("shared.now");
  KillAndReap(shared);
  KillAndReap(late);
}

}  // namespace
}  // namespace gpool::worker
