// A task is its whole process tree: children that outlive the task's first
// process, detach with setsid or leave its process group are tracked and
// killed through the task's cgroup, and the task is reported ended only
// once its cgroup is empty. The process tests need root and a usable
// cgroup layout (this machine and CI: v1 writable as root); elsewhere they
// skip and say why. The layout and limit rules are checked on fake roots.
#include "worker/runner/task_cgroup.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "worker/runner/posix_process_launcher.h"
#include "worker/runner/testing/fake_cgroup_root.h"

namespace gpool::worker {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(CgroupLimitFilesTest, RequestsBecomeLimitsInEachLayout) {
  const CgroupLimits limits{.cpu_milli = 1500, .memory_mib = 2048};
  EXPECT_EQ(CgroupLimitFiles(CgroupLayout::kV2, limits),
            (std::vector<std::pair<std::string, std::string>>{{"memory.max", "2147483648"},
                                                              {"cpu.max", "150000 100000"}}));
  EXPECT_EQ(CgroupLimitFiles(CgroupLayout::kV1, limits),
            (std::vector<std::pair<std::string, std::string>>{{"memory/memory.limit_in_bytes", "2147483648"},
                                                              {"cpu/cpu.cfs_period_us", "100000"},
                                                              {"cpu/cpu.cfs_quota_us", "150000"}}));
  EXPECT_TRUE(CgroupLimitFiles(CgroupLayout::kV2, CgroupLimits{}).empty()) << "no request, no limit";
}

class FakeRoot : public FakeCgroupRoot {};

TEST_F(FakeRoot, AV2HierarchyWithOurControllersIsPreferred) {
  Write(root_ / "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
  Write(root_ / "cgroup.subtree_control", "");
  Write(root_ / "freezer/cgroup.procs", "");
  auto tree = CgroupTree::Open(root_.string(), "node-1");
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  EXPECT_EQ((*tree)->layout(), CgroupLayout::kV2);
  EXPECT_TRUE(fs::is_directory(root_ / "gpool/node-1"));
}

TEST_F(FakeRoot, AnEmptyUnifiedHierarchyFallsBackToV1) {
  Write(root_ / "unified/cgroup.controllers", "");  // hybrid host, no controllers in v2 (this machine)
  Write(root_ / "freezer/cgroup.procs", "");
  Write(root_ / "memory/cgroup.procs", "");
  auto tree = CgroupTree::Open(root_.string(), "node-1");
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  EXPECT_EQ((*tree)->layout(), CgroupLayout::kV1);
  EXPECT_TRUE(fs::is_directory(root_ / "freezer/gpool/node-1"));
  EXPECT_TRUE(fs::is_directory(root_ / "memory/gpool/node-1"));
  EXPECT_NE((*tree)->Describe().find("freezer, memory"), std::string::npos) << (*tree)->Describe();
}

TEST_F(FakeRoot, NoUsableLayoutSaysWhy) {
  auto tree = CgroupTree::Open(root_.string(), "node-1");
  ASSERT_FALSE(tree.ok());
  EXPECT_EQ(tree.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(tree.status().message().find("freezer"), std::string::npos) << tree.status().ToString();
}

// A real cgroup tree for the process tests, or a reason to skip them.
class RealCgroups : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "cgroups need root";
    auto tree = CgroupTree::Open("/sys/fs/cgroup", "test-" + std::to_string(getpid()));
    if (!tree.ok()) GTEST_SKIP() << tree.status().ToString();
    tree_ = std::move(tree).value();
    dir_ = fs::temp_directory_path() / ("gpool-cgroup-test-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    launcher_ = std::make_unique<PosixProcessLauncher>(nullptr, tree_.get());
  }
  void TearDown() override {
    if (tree_ == nullptr) return;
    for (const auto& name : tree_->List()) {
      EXPECT_TRUE(tree_->Adopt(name)->Drain().ok());
    }
    fs::remove_all(dir_);
  }
  static bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(5ms);
    }
    return true;
  }
  // Launches `script` under sh in a cgroup named `name`.
  int64_t Launch(const std::string& name, const std::string& script, CgroupLimits limits = {}) {
    LaunchRequest request;
    request.argv = {"/bin/sh", "-c", script};
    request.env = {"PATH=/usr/bin:/bin"};
    request.log_path = (dir_ / (name + ".log")).string();
    request.cgroup = name;
    request.limits = limits;
    auto pid = launcher_->Launch(request);
    EXPECT_TRUE(pid.ok()) << pid.status().ToString();
    return pid.ok() ? *pid : -1;
  }
  // The pid a task wrote to `file`, once it has.
  int64_t PidIn(const std::string& file) {
    int64_t pid = 0;
    WaitFor([&] {
      std::ifstream in(dir_ / file);
      return static_cast<bool>(in >> pid);
    });
    return pid;
  }
  // Reaps until the task `pid` is reported; what was reported.
  std::optional<ExitInfo> ReapUntilReported(int64_t pid) {
    std::optional<ExitInfo> found;
    WaitFor([&] {
      for (const auto& exit : launcher_->Reap()) {
        if (exit.pid == pid) found = exit;
      }
      return found.has_value();
    });
    return found;
  }
  // Gone, or a zombie waiting for init: no longer running either way.
  static bool Ended(int64_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!std::getline(stat, text)) return true;
    const size_t paren = text.rfind(')');
    return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
  }

  std::unique_ptr<CgroupTree> tree_;
  std::unique_ptr<PosixProcessLauncher> launcher_;
  fs::path dir_;
};

TEST_F(RealCgroups, AGrandchildThatOutlivesTheTaskIsKilledBeforeTheTaskIsReportedEnded) {
  const int64_t pid = Launch("grandchild", "sh -c 'echo $$ > " + (dir_ / "gc.pid").string() +
                                               "; while :; do sleep 1; done' & sleep 0.2; echo x");
  const int64_t grandchild = PidIn("gc.pid");
  ASSERT_GT(grandchild, 0);
  const auto exit = ReapUntilReported(pid);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_TRUE(Ended(grandchild)) << "grandchild " << grandchild << " outlived its task";
  EXPECT_TRUE(tree_->List().empty()) << "the task's cgroup is removed once empty";
}

TEST_F(RealCgroups, ASetsidChildDiesWithItsTasksCancel) {
  const int64_t pid = Launch("setsid", "setsid sh -c 'echo $$ > " + (dir_ / "detached.pid").string() +
                                           "; exec sleep 1000' & exec sleep 1000");
  const int64_t detached = PidIn("detached.pid");
  ASSERT_GT(detached, 0);
  ASSERT_TRUE(launcher_->Signal(pid, SIGTERM).ok());
  const auto exit = ReapUntilReported(pid);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->signal, SIGTERM);
  EXPECT_TRUE(Ended(detached)) << "a setsid child " << detached << " escaped its task";
}

// A task that traps SIGTERM must see it once: the launcher signals the
// task's process group, and the cgroup pass reaches only those that left
// it (a second SIGTERM arriving inside the trap ran the trap twice).
TEST_F(RealCgroups, TheCgroupPassSkipsTheGroupAlreadySignalled) {
  const int64_t pid = Launch("once", "setsid sh -c 'echo $$ > " + (dir_ / "left.pid").string() +
                                         "; exec sleep 1000' & exec sleep 1000");
  const int64_t left = PidIn("left.pid");
  ASSERT_GT(left, 0);
  auto cgroup = tree_->Adopt("once");
  ASSERT_NE(cgroup, nullptr);
  cgroup->SignalAll(SIGKILL, pid);
  EXPECT_TRUE(WaitFor([&] { return Ended(left); })) << "the process that left the group was not signalled";
  EXPECT_FALSE(Ended(pid)) << "a member of the group already signalled was signalled again";
  ASSERT_TRUE(launcher_->Signal(pid, SIGKILL).ok());
  ASSERT_TRUE(ReapUntilReported(pid).has_value());
}

TEST_F(RealCgroups, RequestsAreTheCgroupsLimits) {
  const int64_t pid = Launch("limited", "exec sleep 1000", CgroupLimits{.cpu_milli = 500, .memory_mib = 64});
  auto cgroup = tree_->Adopt("limited");
  ASSERT_NE(cgroup, nullptr);
  EXPECT_EQ(cgroup->Pids(), std::vector<int64_t>{pid});
  const std::string memory = tree_->layout() == CgroupLayout::kV2
                                 ? "/sys/fs/cgroup/gpool/test-" + std::to_string(getpid()) + "/limited/memory.max"
                                 : "/sys/fs/cgroup/memory/gpool/test-" + std::to_string(getpid()) +
                                       "/limited/memory.limit_in_bytes";
  if (fs::exists(memory)) {
    std::ifstream in(memory);
    uint64_t bytes = 0;
    in >> bytes;
    EXPECT_EQ(bytes, 64u << 20);
  }
  ASSERT_TRUE(launcher_->Signal(pid, SIGKILL).ok());
  ASSERT_TRUE(ReapUntilReported(pid).has_value());
}

TEST_F(RealCgroups, ALeftoverOfAPreviousWorkerIsKilledAndReplaced) {
  const int64_t first = Launch("again", "exec sleep 1000");
  // A new launcher (a restarted worker) starting the same task again.
  PosixProcessLauncher restarted(nullptr, tree_.get());
  LaunchRequest request;
  request.argv = {"/bin/sh", "-c", "exec sleep 1000"};
  request.env = {"PATH=/usr/bin:/bin"};
  request.log_path = (dir_ / "again2.log").string();
  request.cgroup = "again";
  auto second = restarted.Launch(request);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(WaitFor([&] { return Ended(first); })) << "the old copy still runs";
  EXPECT_EQ(tree_->Adopt("again")->Pids(), std::vector<int64_t>{*second});
  ASSERT_TRUE(restarted.Signal(*second, SIGKILL).ok());
  EXPECT_TRUE(WaitFor([&] {
    for (const auto& exit : restarted.Reap()) {
      if (exit.pid == *second) return true;
    }
    return false;
  }));
}

}  // namespace
}  // namespace gpool::worker
