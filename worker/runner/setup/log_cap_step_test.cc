// LogCapStep: names the task's log, leaves it on a failed start, and caps
// it a last time when the task is reaped.
#include "worker/runner/setup/log_cap_step.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "protocol/messages_worker.h"
#include "worker/runner/log_cap.h"
#include "worker/runner/task_env.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

TEST(LogCapStepTest, NamesTheLogAndLeavesItOnUndo) {
  testing::TempDir dir;
  testing::CapturedLog log;
  LogCapStep step(dir.path(), 1024, log.logger());
  BindTask bind;
  TaskSetupRecord record;
  TaskSetupContext ctx(TaskId{JobId(3), 1, 2}, bind, record);
  ASSERT_TRUE(step.Prepare(ctx).ok());
  EXPECT_EQ(ctx.request.log_path, TaskLogPath(dir.path(), ctx.id));
  dir.Write("3.1.2.log", "why it never ran\n");
  step.Undo(ctx);
  EXPECT_EQ(testing::ReadFile(ctx.request.log_path), "why it never ran\n") << "the log says why; it stays";
}

TEST(LogCapStepTest, ReleaseCapsTheFinishedLog) {
  testing::TempDir dir;
  testing::CapturedLog log;
  LogCapStep step(dir.path(), 1024, log.logger());
  BindTask bind;
  TaskSetupRecord record;
  TaskSetupContext ctx(TaskId{JobId(3), 0, 0}, bind, record);
  const std::string path = dir.Write("3.0.0.log", std::string(4096, 'x'));
  step.Release(ctx);
  EXPECT_LE(std::filesystem::file_size(path), 1024u);
  EXPECT_GT(DroppedLogBytes(path), 0u);
  EXPECT_TRUE(log.Contains("task log capped task=3.0 max_bytes=1024"));
  // No log (never started): nothing said.
  TaskSetupContext other(TaskId{JobId(9), 0, 0}, bind, record);
  step.Release(other);
  EXPECT_FALSE(log.Contains("not capped"));
}

}  // namespace
}  // namespace gpool::worker
