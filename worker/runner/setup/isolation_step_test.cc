// IsolationStep: the task's identity and directory, and the files the steps
// before it made given to it; a bind mapped to root without --task-user
// root does not start; off, nothing changes.
#include "worker/runner/setup/isolation_step.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "protocol/messages_worker.h"
#include "protocol/model/run_as.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

TaskIsolationOptions Isolated() {
  TaskIsolationOptions options;
  options.enabled = true;
  options.default_identity = TaskIdentity{.set = true, .uid = 40001, .gid = 40002, .user = "t"};
  options.gpu_device_nodes = "";  // device rules: task_isolation_test.cc
  return options;
}

TEST(IsolationStepTest, OffChangesNothing) {
  testing::TempDir dir;
  // Named, not a temporary: GCC 12 -O2 reports the temporary's strings as
  // maybe-uninitialized (a false positive that fails -Werror builds).
  const TaskIsolationOptions off;
  IsolationStep step(off, dir.path(), testing::TaskManagerNode(2));
  BindTask bind = testing::OneGpuBind(16);
  TaskSetupRecord record;
  TaskSetupContext ctx(bind.task, bind, record);
  ASSERT_TRUE(step.Prepare(ctx).ok());
  EXPECT_FALSE(ctx.request.identity.set);
  EXPECT_TRUE(ctx.request.work_dir.empty());
}

TEST(IsolationStepTest, ABindMappedToRootDoesNotStart) {
  testing::TempDir dir;
  IsolationStep step(Isolated(), dir.path(), testing::TaskManagerNode(2));
  BindTask bind = testing::OneGpuBind(17);
  bind.run_as = RunAs{.uid = 0, .gid = 0, .user = "root"};
  TaskSetupRecord record;
  TaskSetupContext ctx(bind.task, bind, record);
  Status failed = step.Prepare(ctx);
  EXPECT_EQ(failed.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(failed.message().find("only with --task-user root"), std::string::npos) << failed.message();
}

TEST(IsolationStepTest, TheStepsFilesAreGivenToTheTask) {
  if (geteuid() != 0) GTEST_SKIP() << "giving a task its files needs chown (root)";
  testing::TempDir dir;
  IsolationStep step(Isolated(), dir.path(), testing::TaskManagerNode(2));
  BindTask bind = testing::OneGpuBind(18);
  TaskSetupRecord record;
  TaskSetupContext ctx(bind.task, bind, record);
  ctx.request.log_path = dir.path() + "/18.0.0.log";
  ctx.env.share_cache_path = dir.path() + "/18.0.0.vgpu.cache";
  ctx.env.cuda_ledger = dir.Write("shm/18.0.0.ledger", "");
  ctx.owned_files = {dir.path() + "/18.0.0.rgpu.key"};
  ASSERT_TRUE(step.Prepare(ctx).ok());
  EXPECT_EQ(ctx.request.identity.uid, 40001u);
  EXPECT_EQ(ctx.request.work_dir, TaskWorkDir(dir.path(), bind.task));
  for (const std::string& path :
       {ctx.request.log_path, ctx.env.share_cache_path, ctx.env.cuda_ledger, ctx.owned_files[0]}) {
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_uid, 40001u) << path;
    EXPECT_EQ(st.st_mode & 07777, 0600u) << path;
  }
}

}  // namespace
}  // namespace gpool::worker
