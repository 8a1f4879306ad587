// CgroupStep: the task's cgroup is named for its attempt and its requests
// are its limits.
#include "protocol/messages_worker.h"
#include "worker/runner/setup/cgroup_step.h"

#include <gtest/gtest.h>

namespace gpool::worker {
namespace {

TEST(CgroupStepTest, NamesTheCgroupAndSetsTheRequestsAsLimits) {
  CgroupStep step;
  BindTask bind;
  bind.cpu_milli = 2500;
  bind.memory_mib = 4096;
  TaskSetupRecord record;
  TaskSetupContext ctx(TaskId{JobId(12), 3, 1}, bind, record);
  ASSERT_TRUE(step.Prepare(ctx).ok());
  EXPECT_EQ(ctx.request.cgroup, "task-12.3.1");
  EXPECT_EQ(ctx.request.limits.cpu_milli, 2500u);
  EXPECT_EQ(ctx.request.limits.memory_mib, 4096u);
  EXPECT_TRUE(ctx.request.limits.deny_devices.empty());
}

}  // namespace
}  // namespace gpool::worker
