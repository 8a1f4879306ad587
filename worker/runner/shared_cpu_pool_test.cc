// The shared CPU pool (shared_cpu_pool.h) on fake cgroup roots, v1 and v2:
// a shared task's cpuset loses the cores an exclusive task holds and gets
// them back when it ends; a cgroup the pool was not told about is never
// written; an empty pool leaves the shared tasks on every allowed CPU, with
// a warning. On real cgroups: task_cpuset_test.cc.
#include "worker/runner/shared_cpu_pool.h"

#include <gtest/gtest.h>

#include "topology/cpulist.h"
#include "worker/runner/testing/fake_cgroup_root.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {
namespace fs = std::filesystem;

class SharedPoolFakeRoot : public FakeCgroupRoot {
 protected:
  // A tree of `layout` under root_/<sub> whose subtree may use `allowed`, as
  // the kernel shows them: v1 with freezer and cpuset hierarchies, v2 with
  // cpuset enabled down to the tasks' parent.
  std::unique_ptr<CgroupTree> OpenTree(CgroupLayout layout, const std::string& sub, const std::string& allowed) {
    const fs::path at = root_ / sub;
    if (layout == CgroupLayout::kV1) {
      Write(at / "unified/cgroup.controllers", "");
      Write(at / "freezer/cgroup.procs", "");
      Write(at / "cpuset/cgroup.procs", "");
      Write(at / "cpuset/cpuset.cpus", allowed + "\n");
      Write(at / "cpuset/cpuset.mems", "0\n");
      for (const char* level : {"cpuset/gpool", "cpuset/gpool/node-1"}) {  // new levels start empty
        Write(at / level / "cpuset.cpus", "");
        Write(at / level / "cpuset.mems", "");
      }
      cpuset_dir_ = at / "cpuset/gpool/node-1";
    } else {
      Write(at / "cgroup.controllers", "cpuset cpu io memory pids\n");
      Write(at / "cgroup.subtree_control", "");
      Write(at / "gpool/cgroup.subtree_control", "");
      Write(at / "gpool/node-1/cgroup.subtree_control", "");
      Write(at / "gpool/node-1/cpuset.cpus.effective", allowed + "\n");
      cpuset_dir_ = at / "gpool/node-1";
    }
    auto tree = CgroupTree::Open(at.string(), "node-1");
    EXPECT_TRUE(tree.ok()) << tree.status().ToString();
    if (!tree.ok()) return nullptr;
    EXPECT_EQ((*tree)->layout(), layout);
    EXPECT_TRUE((*tree)->cpuset_available()) << (*tree)->cpuset_why_not();
    return std::move(tree).value();
  }
  // A task cgroup as the kernel shows it, with `cpus` in its cpuset.
  void MakeTask(const std::string& name, const std::string& cpus) { Write(cpuset_dir_ / name / "cpuset.cpus", cpus); }
  std::string TaskCpus(const std::string& name) { return ReadCgroupFile(cpuset_dir_ / name / "cpuset.cpus"); }

  fs::path cpuset_dir_;  // the tasks' cpuset directories' parent
};

TEST_F(SharedPoolFakeRoot, ASharedTaskLosesTheHeldCoresAndGetsThemBackInEachLayout) {
  for (CgroupLayout layout : {CgroupLayout::kV1, CgroupLayout::kV2}) {
    const bool v1 = layout == CgroupLayout::kV1;
    SCOPED_TRACE(v1 ? "v1" : "v2");
    auto tree = OpenTree(layout, v1 ? "v1" : "v2", "0-7");
    ASSERT_NE(tree, nullptr);
    MakeTask("shared-a", "0-7");
    MakeTask("pinned-b", "2-3");
    SharedCpuPool pool(tree.get(), nullptr);
    EXPECT_EQ(topology::FormatCpuList(pool.Cpus()), "0-7") << "nothing held: the worker's CPUs";
    pool.Join("shared-a", pool.generation());
    EXPECT_EQ(TaskCpus("shared-a"), "0-7") << "made from the current pool: not rewritten";

    pool.Hold("pinned-b", {2, 3});
    EXPECT_EQ(TaskCpus("shared-a"), "0-1,4-7") << "narrowed before the exclusive task runs";
    EXPECT_EQ(TaskCpus("pinned-b"), "2-3") << "the exclusive task's own cpuset is not the pool's";
    EXPECT_EQ(topology::FormatCpuList(pool.Cpus()), "0-1,4-7") << "what a shared task starting now gets";

    pool.Hold("pinned-c", {5});
    EXPECT_EQ(TaskCpus("shared-a"), "0-1,4,6-7");
    pool.Forget("pinned-b");
    EXPECT_EQ(TaskCpus("shared-a"), "0-4,6-7") << "widened when the exclusive task ends";
    pool.Forget("pinned-c");
    EXPECT_EQ(TaskCpus("shared-a"), "0-7");
    EXPECT_FALSE(pool.Holds("pinned-b"));
  }
}

TEST_F(SharedPoolFakeRoot, AStartMadeFromAnOlderPoolIsCorrectedWhenItJoins) {
  auto tree = OpenTree(CgroupLayout::kV2, "v2", "0-3");
  ASSERT_NE(tree, nullptr);
  SharedCpuPool pool(tree.get(), nullptr);
  const uint64_t began = pool.generation();  // a supervised launch begins with the pool 0-3...
  pool.Hold("pinned", {0});                  // ...an exclusive one begins before it is answered
  MakeTask("late", "0-3");                   // its supervisor made its cgroup from the older pool
  pool.Join("late", began);
  EXPECT_EQ(TaskCpus("late"), "1-3");
  EXPECT_TRUE(pool.Keeps("late"));
  pool.Forget("late");
  pool.Forget("pinned");
  EXPECT_EQ(TaskCpus("late"), "1-3") << "a task forgotten is no longer written";
}

TEST_F(SharedPoolFakeRoot, ANumaPinnedSharedTaskKeepsItsNodeInItsCpuset) {
  // Kernels before 6.2 reset the affinity of every thread in a cpuset
  // rewritten, so the pinning to NUMA node 0 (CPUs 0-3) is in the cpuset.
  auto tree = OpenTree(CgroupLayout::kV1, "v1", "0-7");
  ASSERT_NE(tree, nullptr);
  MakeTask("numa0", "0-3");
  SharedCpuPool pool(tree.get(), nullptr);
  EXPECT_EQ(topology::FormatCpuList(pool.CpusWithin({0, 1, 2, 3})), "0-3");
  pool.Join("numa0", pool.generation(), {0, 1, 2, 3});
  pool.Hold("pinned-a", {2});
  EXPECT_EQ(TaskCpus("numa0"), "0-1,3") << "its node's CPUs less the held one, not the whole pool";
  pool.Hold("pinned-b", {0, 1, 3});
  EXPECT_EQ(TaskCpus("numa0"), "4-7") << "its node wholly held: the pool, off those cores";
  pool.Forget("pinned-b");
  EXPECT_EQ(TaskCpus("numa0"), "0-1,3");
}

TEST_F(SharedPoolFakeRoot, ACgroupThePoolWasNotToldAboutIsNeverWritten) {
  // After a worker restart, an exclusive task not adopted yet must not be
  // taken for a shared one and widened onto the pool.
  auto tree = OpenTree(CgroupLayout::kV1, "v1", "0-3");
  ASSERT_NE(tree, nullptr);
  MakeTask("shared-a", "0-3");
  MakeTask("pinned-not-adopted", "3");
  SharedCpuPool pool(tree.get(), nullptr);
  pool.Join("shared-a", pool.generation());
  pool.Hold("pinned-adopted", {0});
  EXPECT_EQ(TaskCpus("shared-a"), "1-3");
  EXPECT_EQ(TaskCpus("pinned-not-adopted"), "3");
}

TEST_F(SharedPoolFakeRoot, AnEmptyPoolLeavesSharedTasksOnEveryAllowedCpuAndWarns) {
  auto tree = OpenTree(CgroupLayout::kV1, "v1", "0-1");
  ASSERT_NE(tree, nullptr);
  MakeTask("shared-a", "0-1");
  testing::CapturedLog log;
  SharedCpuPool pool(tree.get(), log.logger());
  pool.Join("shared-a", pool.generation());
  pool.Hold("pinned-x", {0});
  EXPECT_EQ(TaskCpus("shared-a"), "1");
  pool.Hold("pinned-y", {1});
  EXPECT_EQ(TaskCpus("shared-a"), "0-1") << "never an empty cpuset: all allowed CPUs instead";
  EXPECT_EQ(topology::FormatCpuList(pool.Cpus()), "0-1");
  EXPECT_TRUE(log.Contains("warning exclusive cores leave no CPU for shared tasks")) << log.text();
  EXPECT_TRUE(log.Contains("allowed=0-1 held=0-1")) << log.text();
  pool.Forget("pinned-y");
  EXPECT_EQ(TaskCpus("shared-a"), "1") << "a core of its own again: the pool is what is not held";
}

TEST_F(SharedPoolFakeRoot, UnreadableAllowedCpusGiveNoPoolAndTouchNothing) {
  // v2 without cpuset.cpus.effective: no pool to cut; new shared tasks get
  // no cpuset (as before the pool), running ones keep theirs.
  Write(root_ / "cgroup.controllers", "cpuset cpu io memory pids\n");
  Write(root_ / "cgroup.subtree_control", "");
  Write(root_ / "gpool/cgroup.subtree_control", "");
  Write(root_ / "gpool/node-1/cgroup.subtree_control", "");
  Write(root_ / "gpool/node-1/shared-a/cpuset.cpus", "0-3");
  auto tree = CgroupTree::Open(root_.string(), "node-1");
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  EXPECT_EQ((*tree)->AllowedCpus().status().code(), StatusCode::kUnavailable);
  SharedCpuPool pool(tree->get(), nullptr);
  EXPECT_TRUE(pool.Cpus().empty());
  pool.Join("shared-a", 0);
  pool.Hold("pinned", {1});
  EXPECT_EQ(ReadCgroupFile(root_ / "gpool/node-1/shared-a/cpuset.cpus"), "0-3");
}

TEST_F(SharedPoolFakeRoot, SetTaskCpusRefusesWhatWouldBreakATask) {
  auto tree = OpenTree(CgroupLayout::kV1, "v1", "0-3");
  ASSERT_NE(tree, nullptr);
  MakeTask("shared-a", "0-3");
  EXPECT_EQ(tree->SetTaskCpus("shared-a", {}).code(), StatusCode::kInvalidArgument) << "an empty cpuset";
  EXPECT_EQ(tree->SetTaskCpus("../escape", {1}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tree->SetTaskCpus("no-cpuset", {1}).code(), StatusCode::kNotFound);
  EXPECT_EQ(TaskCpus("shared-a"), "0-3") << "refusals change nothing";
  ASSERT_TRUE(tree->SetTaskCpus("shared-a", {1, 2}).ok());
  EXPECT_EQ(TaskCpus("shared-a"), "1-2");
}

TEST(SharedPoolLimitFilesTest, TheSharedPoolIsTheCpusetOfATaskWithoutExclusiveCores) {
  CgroupLimits limits;
  limits.shared_cpus = {0, 1, 4};
  using FileValues = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(CgroupLimitFiles(CgroupLayout::kV1, limits), (FileValues{{"cpuset/cpuset.cpus", "0-1,4"}}));
  EXPECT_EQ(CgroupLimitFiles(CgroupLayout::kV2, limits), (FileValues{{"cpuset.cpus", "0-1,4"}}));
  limits.cpuset_cpus = {2};
  EXPECT_EQ(CgroupLimitFiles(CgroupLayout::kV2, limits), (FileValues{{"cpuset.cpus", "2"}}))
      << "exclusive cores win over the pool";
}

}  // namespace
}  // namespace gpool::worker
