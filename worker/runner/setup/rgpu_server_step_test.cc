// RgpuServerStep: a session runs the server with a key drawn for it, which
// goes (with the endpoint the server reported) on undo and at the reap; a
// node that runs no server fails the session's start, saying so in its log.
#include "worker/runner/setup/rgpu_server_step.h"

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "protocol/messages_worker.h"
#include "worker/runner/task_isolation.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

namespace fs = std::filesystem;
using testing::kOwnerKey;

class RgpuServerStepTest : public ::testing::Test {
 protected:
  RgpuServerStepOptions Options(const std::string& server) const {
    RgpuServerStepOptions options;
    options.rgpu.server = server;
    options.log_dir = dir_.path();
    options.real_driver = "/usr/lib/libcuda.so.1";
    return options;
  }
  BindTask SessionBind() const {
    BindTask bind = testing::OneGpuBind(21);
    bind.rgpu.owner_key = kOwnerKey;
    return bind;
  }
  testing::TempDir dir_;
  TaskSetupRecord record_;
};

TEST_F(RgpuServerStepTest, ASessionRunsTheServerWithAKeyThatGoesOnUndo) {
  RgpuServerStep step(Options("/opt/gpool/bin/gpool-rgpu-server"));
  BindTask bind = SessionBind();
  TaskSetupContext ctx(bind.task, bind, record_);
  ctx.request.argv = bind.command;
  ASSERT_TRUE(step.Prepare(ctx).ok());
  ASSERT_FALSE(ctx.request.argv.empty());
  EXPECT_EQ(ctx.request.argv[0], "/opt/gpool/bin/gpool-rgpu-server");
  EXPECT_FALSE(bind.rgpu.server_key.empty()) << "the bind carries the server's key";
  const std::string key = TaskRgpuKeyPath(dir_.path(), bind.task);
  EXPECT_EQ(ctx.owned_files, std::vector<std::string>{key});
  EXPECT_TRUE(fs::exists(key));
  // The whole GPU's server opens the real driver by path.
  EXPECT_NE(std::find(ctx.request.argv.begin(), ctx.request.argv.end(), "/usr/lib/libcuda.so.1"),
            ctx.request.argv.end());

  const std::string endpoint = dir_.Write(fs::path(RgpuEndpointFileOf(dir_.path(), false, bind.task)).filename(),
                                          "tcp://127.0.0.1:5555\n");
  step.Undo(ctx);
  EXPECT_FALSE(fs::exists(key));
  EXPECT_FALSE(fs::exists(endpoint));
  step.Release(ctx);  // idempotent
}

TEST_F(RgpuServerStepTest, ANodeWithoutAServerFailsTheSession) {
  RgpuServerStep step(Options(""));
  EXPECT_EQ(step.LogNote(), "session not started");
  BindTask bind = SessionBind();
  TaskSetupContext ctx(bind.task, bind, record_);
  EXPECT_EQ(step.Prepare(ctx).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(ctx.owned_files.empty());
}

TEST_F(RgpuServerStepTest, OtherTasksAreLeftAlone) {
  RgpuServerStep step(Options("/opt/gpool/bin/gpool-rgpu-server"));
  BindTask bind = testing::OneGpuBind(22);
  TaskSetupContext ctx(bind.task, bind, record_);
  ctx.request.argv = bind.command;
  ASSERT_TRUE(step.Prepare(ctx).ok());
  EXPECT_EQ(ctx.request.argv, bind.command);
  EXPECT_TRUE(ctx.owned_files.empty());
}

TEST_F(RgpuServerStepTest, AnIsolatedServerReportsInItsWorkDirectory) {
  const TaskId id{JobId(23), 0, 0};
  EXPECT_EQ(RgpuEndpointFileOf("/tasks", true, id), TaskRgpuEndpointPath(TaskWorkDir("/tasks", id), id));
  EXPECT_EQ(RgpuEndpointFileOf("/tasks", false, id), TaskRgpuEndpointPath("/tasks", id));
}

}  // namespace
}  // namespace gpool::worker
