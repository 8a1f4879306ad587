// ShareFilesStep: an interposed share gets its private driver directory and
// ledger, which go on undo and at the reap; a share whose ledger cannot be
// made does not start, and leaves nothing behind.
#include "worker/runner/setup/share_files_step.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "worker/runner/task_env.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

namespace fs = std::filesystem;

class ShareFilesStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A dummy file stands in for libgpool-cuda.so.1: only the link to it
    // is under test here.
    share_.interposer = dir_.Write("lib/libgpool-cuda.so.1", "not a library");
    share_.ledger_dir = dir_.path() + "/shm";
    share_.real_driver = "/usr/lib/libcuda.so.1";
    fs::create_directories(share_.ledger_dir);
    fs::create_directories(tasks());
    bind_.task = id_;
    bind_.gpu_indices = {0};
    bind_.gpu_memory_mib = 1024;
  }
  std::string tasks() const { return dir_.path() + "/tasks"; }

  testing::TempDir dir_;
  testing::CapturedLog log_;
  ShareEnforcementOptions share_;
  TaskId id_{JobId(5), 0, 0};
  BindTask bind_;
  TaskSetupRecord record_;
};

TEST_F(ShareFilesStepTest, AnInterposedSharesFilesAreMadeAndUndone) {
  ShareFilesStep step(tasks(), "", share_, log_.logger());
  TaskSetupContext ctx(id_, bind_, record_);
  ASSERT_TRUE(step.Prepare(ctx).ok());
  EXPECT_EQ(ctx.env.cuda_lib_dir, TaskCudaDir(tasks(), id_));
  EXPECT_EQ(ctx.env.cuda_ledger, TaskCudaLedgerPath(share_.ledger_dir, id_));
  EXPECT_EQ(ctx.env.cuda_real_driver, "/usr/lib/libcuda.so.1");
  EXPECT_EQ(ctx.env.share_cache_path, TaskShareCachePath(tasks(), id_));
  EXPECT_TRUE(fs::is_symlink(ctx.env.cuda_lib_dir + "/libcuda.so.1"));
  EXPECT_TRUE(fs::exists(ctx.env.cuda_ledger));
  EXPECT_TRUE(log_.Contains("gpu share interposed task=5.0 "));

  std::ofstream(ctx.env.share_cache_path) << "hami";
  step.Undo(ctx);
  EXPECT_FALSE(fs::exists(ctx.env.cuda_lib_dir));
  EXPECT_FALSE(fs::exists(ctx.env.cuda_ledger));
  EXPECT_FALSE(fs::exists(ctx.env.share_cache_path));
  step.Undo(ctx);  // idempotent
  step.Release(ctx);
  EXPECT_FALSE(log_.Contains("not removed"));
}

TEST_F(ShareFilesStepTest, ALedgerThatCannotBeMadeFailsTheStartAndLeavesNothing) {
  share_.ledger_dir = dir_.path() + "/missing";
  ShareFilesStep step(tasks(), "", share_, log_.logger());
  TaskSetupContext ctx(id_, bind_, record_);
  Status failed = step.Prepare(ctx);
  EXPECT_EQ(failed.code(), StatusCode::kIoError);
  EXPECT_NE(failed.message().find("cannot prepare the GPU share's ledger"), std::string::npos) << failed.message();
  EXPECT_FALSE(fs::exists(TaskCudaDir(tasks(), id_))) << "its directory went with the failure";
}

TEST_F(ShareFilesStepTest, HamiCoreOrAWholeGpuGetsNoPrivateDriver) {
  const std::string vgpu = dir_.Write("vgpu/libvgpu.so", "");
  ShareFilesStep hami(tasks(), vgpu, share_, log_.logger());
  TaskSetupContext ctx(id_, bind_, record_);
  ASSERT_TRUE(hami.Prepare(ctx).ok());
  EXPECT_EQ(ctx.env.cuda_intercept_lib, vgpu);
  EXPECT_EQ(ctx.env.share_cache_path, TaskShareCachePath(tasks(), id_));
  EXPECT_TRUE(ctx.env.cuda_lib_dir.empty());

  BindTask whole = bind_;
  whole.gpu_memory_mib = 0;
  ShareFilesStep step(tasks(), "", share_, log_.logger());
  TaskSetupContext whole_ctx(id_, whole, record_);
  ASSERT_TRUE(step.Prepare(whole_ctx).ok());
  EXPECT_TRUE(whole_ctx.env.share_cache_path.empty());
  EXPECT_TRUE(whole_ctx.env.cuda_lib_dir.empty());
  EXPECT_FALSE(fs::exists(TaskCudaDir(tasks(), id_)));
}

// Issue 50: a share that nothing on the node can hold does not start, and
// the refusal is typed, says what is missing and leaves nothing behind;
// the operator's opt-out runs it with its limits as variables only.
TEST_F(ShareFilesStepTest, AShareNothingHereCanHoldIsRefusedUnlessTheOperatorAllowsIt) {
  ShareEnforcementOptions missing = share_;
  missing.interposer.clear();
  missing.interposer_missing = "/opt/gpool/lib/gpool/libgpool-cuda.so.1";
  ShareFilesStep step(tasks(), "", missing, log_.logger());
  TaskSetupContext ctx(id_, bind_, record_);
  const Status refused = step.Prepare(ctx);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(RefusedUnenforceableShare(refused.message())) << refused.message();
  EXPECT_NE(refused.message().find("/opt/gpool/lib/gpool/libgpool-cuda.so.1"), std::string::npos) << refused.message();
  EXPECT_TRUE(ctx.env.share_cache_path.empty());
  EXPECT_FALSE(fs::exists(TaskCudaDir(tasks(), id_)));

  // The intercept library named but gone from disk: the same.
  ShareFilesStep gone(tasks(), dir_.path() + "/vgpu/libvgpu.so", share_, log_.logger());
  TaskSetupContext gone_ctx(id_, bind_, record_);
  const Status gone_refused = gone.Prepare(gone_ctx);
  EXPECT_EQ(gone_refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(gone_refused.message().find("intercept library " + dir_.path() + "/vgpu/libvgpu.so is missing"),
            std::string::npos)
      << gone_refused.message();

  // A whole GPU never needed either.
  BindTask whole = bind_;
  whole.gpu_memory_mib = 0;
  TaskSetupContext whole_ctx(id_, whole, record_);
  EXPECT_TRUE(step.Prepare(whole_ctx).ok());

  missing.allow_unenforced = true;
  ShareFilesStep allowed(tasks(), "", missing, log_.logger());
  TaskSetupContext allowed_ctx(id_, bind_, record_);
  ASSERT_TRUE(allowed.Prepare(allowed_ctx).ok());
  EXPECT_TRUE(allowed_ctx.env.cuda_lib_dir.empty()) << "runs unenforced: no private driver";
}

}  // namespace
}  // namespace gpool::worker
