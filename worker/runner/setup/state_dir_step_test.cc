// StateDirStep: with adopt_tasks the bind is on disk before the launch, in
// the directory the launcher's supervisor shares; without, nothing is kept.
#include "worker/runner/setup/state_dir_step.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "protocol/messages_worker.h"
#include "protocol/wire.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/runner/task_records.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

namespace fs = std::filesystem;

TEST(StateDirStepTest, TheBindIsWrittenBeforeTheLaunch) {
  testing::TempDir dir;
  StateDirStep step(/*adopt_tasks=*/true, dir.path());
  BindTask bind = testing::OneGpuBind(14);
  TaskSetupRecord record;
  TaskSetupContext ctx(bind.task, bind, record);
  ASSERT_TRUE(step.Prepare(ctx).ok());
  const std::string state = TaskStateDir(dir.path(), bind.task);
  EXPECT_EQ(ctx.request.state_dir, state);
  EXPECT_EQ(record.state_dir, state);
  auto kept = wire::UnpackFromString<BindTask>(testing::ReadFile(BindPath(state)));
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->task, bind.task);
  EXPECT_EQ(kept->command, bind.command);
  step.Undo(ctx);  // it goes with the record, not with a failed start
  EXPECT_TRUE(fs::exists(BindPath(state)));
  EXPECT_TRUE(step.LogNote().empty());
}

TEST(StateDirStepTest, WithoutAdoptionNothingIsKeptAndAnUnwritableRootFails) {
  testing::TempDir dir;
  BindTask bind = testing::OneGpuBind(15);
  TaskSetupRecord record;
  TaskSetupContext ctx(bind.task, bind, record);
  StateDirStep off(/*adopt_tasks=*/false, dir.path());
  ASSERT_TRUE(off.Prepare(ctx).ok());
  EXPECT_TRUE(ctx.request.state_dir.empty());
  EXPECT_FALSE(fs::exists(TaskStateDir(dir.path(), bind.task)));

  const std::string file = dir.Write("not-a-dir", "x");
  StateDirStep blocked(/*adopt_tasks=*/true, file);
  Status failed = blocked.Prepare(ctx);
  EXPECT_EQ(failed.code(), StatusCode::kIoError);
  EXPECT_NE(failed.message().find("cannot create task state directory"), std::string::npos) << failed.message();
  EXPECT_TRUE(record.state_dir.empty());
}

}  // namespace
}  // namespace gpool::worker
