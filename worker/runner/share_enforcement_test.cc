// The pieces of share enforcement (share_enforcement.h): which interposer,
// which tasks get it, its private directory, and the bypass catch's count.
#include "worker/runner/share_enforcement.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

namespace fs = std::filesystem;

void Touch(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << "x";
}

BindTask ShareBind(uint64_t job, uint32_t memory_mib, std::vector<uint32_t> gpus = {0}) {
  BindTask bind;
  bind.task = TaskId{JobId(job), 0, 0};
  bind.command = {"python"};
  bind.gpu_indices = std::move(gpus);
  bind.gpu_memory_mib = memory_mib;
  return bind;
}

TEST(ShareEnforcementTest, TheInterposerIsFoundInstalledOrInTheBuildTree) {
  testing::TempDir dir;
  const std::string exe = dir.path() + "/bin/gpool-worker";
  EXPECT_EQ(InterposerPathsNextTo(exe),
            (std::vector<std::string>{dir.path() + "/lib/gpool/libgpool-cuda.so.1",
                                      dir.path() + "/bin/cuda/libgpool-cuda.so.1"}));

  InterposerChoice missing = ChooseInterposer("", "", exe);
  EXPECT_TRUE(missing.path.empty());
  EXPECT_TRUE(missing.warn) << "enforcement off without being asked: said loudly";
  EXPECT_NE(missing.message.find("cannot be enforced"), std::string::npos) << missing.message;
  EXPECT_NE(missing.message.find(dir.path() + "/lib/gpool/libgpool-cuda.so.1"), std::string::npos) << missing.message;

  Touch(dir.path() + "/bin/cuda/libgpool-cuda.so.1");  // the build tree: worker/gpool-worker, worker/cuda/
  EXPECT_EQ(ChooseInterposer("", "", exe).path, dir.path() + "/bin/cuda/libgpool-cuda.so.1");
  Touch(dir.path() + "/lib/gpool/libgpool-cuda.so.1");  // installed wins
  InterposerChoice installed = ChooseInterposer("", "", exe);
  EXPECT_EQ(installed.path, dir.path() + "/lib/gpool/libgpool-cuda.so.1");
  EXPECT_FALSE(installed.warn);
}

TEST(ShareEnforcementTest, AFlagNamesTheInterposerOrTurnsItOff) {
  testing::TempDir dir;
  const std::string lib = dir.path() + "/libgpool-cuda.so.1";
  Touch(lib);
  EXPECT_EQ(ChooseInterposer(lib, "", "/nowhere/gpool-worker").path, lib);

  InterposerChoice gone = ChooseInterposer(dir.path() + "/nope.so", "", "/nowhere/gpool-worker");
  EXPECT_TRUE(gone.path.empty()) << "a dangling link would break the task's driver";
  EXPECT_TRUE(gone.warn);

  InterposerChoice none = ChooseInterposer("none", "", "/nowhere/gpool-worker");
  EXPECT_TRUE(none.path.empty());
  EXPECT_FALSE(none.warn) << "asked for";

  InterposerChoice hami = ChooseInterposer(lib, "/usr/local/vgpu/libvgpu.so", "/nowhere/gpool-worker");
  EXPECT_TRUE(hami.path.empty()) << "HAMi-core replaces it: never both";
  EXPECT_FALSE(hami.warn);
}

TEST(ShareEnforcementTest, OnlySharesOutsideMigAreInterposed) {
  ShareEnforcementOptions share;
  share.interposer = "/lib/libgpool-cuda.so.1";
  BindTask bind = ShareBind(1, 1024);
  EXPECT_TRUE(InterposedShare(bind, share, ""));
  BindTask compute = ShareBind(1, 0);
  compute.gpu_compute_pct = 30;
  EXPECT_TRUE(InterposedShare(compute, share, "")) << "a compute share is paced by the interposer too";
  EXPECT_FALSE(InterposedShare(ShareBind(1, 0), share, "")) << "a whole GPU";
  BindTask mig = ShareBind(1, 1024);
  mig.mig_profiles = {"1g.10gb"};
  mig.mig_starts = {0};
  EXPECT_FALSE(InterposedShare(mig, share, "")) << "MIG is isolated by the hardware";
  EXPECT_FALSE(InterposedShare(bind, share, "/usr/local/vgpu/libvgpu.so"));
  EXPECT_FALSE(InterposedShare(bind, ShareEnforcementOptions{}, "")) << "no interposer";
}

// Issue 50: which shares nothing on the node can hold.
TEST(ShareEnforcementTest, ASharesLimitsAreUnenforceableOnlyWhereTheirHolderIsMissing) {
  testing::TempDir dir;
  ShareEnforcementOptions missing;
  missing.interposer_missing = "/opt/lib/gpool/libgpool-cuda.so.1";
  const BindTask bind = ShareBind(1, 1024);
  const std::string why = UnenforceableShare(bind, missing, "");
  EXPECT_EQ(why.rfind(kUnenforceableShareReason, 0), 0u) << why;
  EXPECT_NE(why.find("/opt/lib/gpool/libgpool-cuda.so.1"), std::string::npos) << why;
  EXPECT_NE(why.find("--allow-unenforced-shares"), std::string::npos) << "says the way out: " << why;
  EXPECT_EQ(UnenforceableShare(ShareBind(1, 0), missing, ""), "") << "a whole GPU";
  BindTask mig = bind;
  mig.mig_profiles = {"1g.10gb"};
  mig.mig_starts = {0};
  EXPECT_EQ(UnenforceableShare(mig, missing, ""), "") << "MIG is held by the hardware";
  ShareEnforcementOptions allowed = missing;
  allowed.allow_unenforced = true;
  EXPECT_EQ(UnenforceableShare(bind, allowed, ""), "") << "the operator's opt-out";
  EXPECT_EQ(UnenforceableShare(bind, ShareEnforcementOptions{}, ""), "")
      << "--cuda-interposer none: nothing was looked for";

  // The intercept library replaces the interposer; it must be on disk now.
  const std::string vgpu = dir.Write("libvgpu.so", "");
  EXPECT_EQ(UnenforceableShare(bind, missing, vgpu), "");
  EXPECT_EQ(UnenforceableShare(bind, missing, "libvgpu.so"), "") << "a bare name is the loader's to find";
  const std::string gone = UnenforceableShare(bind, ShareEnforcementOptions{}, dir.path() + "/gone.so");
  EXPECT_TRUE(RefusedUnenforceableShare(gone)) << gone;
}

TEST(ShareEnforcementTest, ThePrivateDirectoryHoldsOnlyTheLinkAndGoesAway) {
  testing::TempDir dir;
  const TaskId id{JobId(12), 3, 2};
  const std::string cuda = TaskCudaDir(dir.path() + "/tasks", id);
  EXPECT_EQ(cuda, dir.path() + "/tasks/12.3.2.cuda");
  EXPECT_EQ(TaskCudaLedgerPath("/dev/shm", id), "/dev/shm/gpool-cuda-12-3-2");

  Touch(cuda + "/planted.so");  // what a previous try might have left
  const std::string lib = dir.path() + "/lib/libgpool-cuda.so.1";
  Touch(lib);
  ASSERT_TRUE(PrepareCudaDir(cuda, lib).ok());
  EXPECT_EQ(fs::read_symlink(cuda + "/libcuda.so.1").string(), lib);
  EXPECT_FALSE(fs::exists(cuda + "/planted.so"));
  struct stat st{};
  ASSERT_EQ(stat(cuda.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u) << "the task may read it, never write it";

  const std::string ledger = dir.path() + "/shm/gpool-cuda-12-3-2";
  Touch(ledger);
  EXPECT_EQ(RemoveShareFiles(cuda, ledger), "");
  EXPECT_FALSE(fs::exists(cuda));
  EXPECT_FALSE(fs::exists(ledger));
  EXPECT_TRUE(fs::exists(lib)) << "the link goes, not what it points at";
  EXPECT_EQ(RemoveShareFiles(cuda, ledger), "") << "already gone: no error";
}

TEST(ShareEnforcementTest, TheToleranceIsTheFloorOrFivePercent) {
  EXPECT_EQ(ShareMemoryLimitMib(ShareBind(1, 10240, {0, 1})), 20480u) << "per GPU";
  EXPECT_EQ(ShareMemoryToleranceMib(1024, 64), 64u);
  EXPECT_EQ(ShareMemoryToleranceMib(20480, 64), 1024u);
  EXPECT_EQ(OverShareReason(20480, 10240, "the interposer was bypassed"),
            "GPU memory 20480 MiB over its share of 10240 MiB (the interposer was bypassed)");
  EXPECT_TRUE(StoppedOverShare("stopped by the worker: " + OverShareReason(20480, 10240, "x")));
  EXPECT_FALSE(StoppedOverShare("stopped by the worker: time limit"));
  EXPECT_FALSE(StoppedOverShare("GPU memory 1 MiB over its share of 0 MiB")) << "the task's own words";
}

TEST(ShareEnforcementTest, TwoOverSamplesInARowStopATask) {
  ShareMemoryGuard guard(64);
  const BindTask a = ShareBind(1, 10240);
  const BindTask b = ShareBind(2, 0);  // compute only: no memory limit
  std::map<TaskId, const BindTask*> shares = {{a.task, &a}, {b.task, &b}};
  auto usage = [&](uint64_t a_mib) {
    return std::vector<TaskUsage>{{a.task, a_mib}, {b.task, 80'000}};
  };
  const uint64_t edge = 10240 + 512;  // 5 % of 10240 beats the 64 MiB floor
  EXPECT_TRUE(guard.Observe(shares, usage(edge)).empty());
  EXPECT_TRUE(guard.Observe(shares, usage(edge)).empty()) << "within the tolerance, however often";
  EXPECT_TRUE(guard.Observe(shares, usage(edge + 1)).empty()) << "one sample is not enough";
  EXPECT_TRUE(guard.Observe(shares, usage(100)).empty()) << "back within: the count starts over";
  EXPECT_TRUE(guard.Observe(shares, usage(20480)).empty());
  EXPECT_TRUE(guard.Observe(shares, {}).empty()) << "not measured: starts over too";
  EXPECT_TRUE(guard.Observe(shares, usage(20480)).empty());
  auto stop = guard.Observe(shares, usage(20480));
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_EQ(stop[0].task, a.task);
  EXPECT_EQ(stop[0].used_mib, 20480u);
  EXPECT_EQ(stop[0].limit_mib, 10240u);
}

}  // namespace
}  // namespace gpool::worker
