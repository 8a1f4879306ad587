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

TEST(CgroupStepTest, ExclusiveCoresBecomeTheCpusetAndThePinning) {
  BindTask bind;
  bind.cpu_milli = 2000;
  bind.exclusive_cpus = {6, 7};
  bind.numa_policy = "single-numa-node";
  bind.numa_node = 1;
  TaskSetupRecord record;
  TaskSetupContext ctx(TaskId{JobId(12), 3, 1}, bind, record);
  ctx.request.numa.cpus = {4, 5, 6, 7};  // what NumaStep chose: the whole NUMA node
  ctx.request.numa.nodes = {1};
  ASSERT_TRUE(CgroupStep().Prepare(ctx).ok());
  EXPECT_EQ(ctx.request.limits.cpuset_cpus, (std::vector<uint32_t>{6, 7}));
  EXPECT_EQ(ctx.request.limits.cpuset_mems, "1") << "single-numa-node keeps memory on its cores' node";
  EXPECT_TRUE(ctx.request.limits.cpuset_required) << "refused where no cpuset can be made, by default";
  EXPECT_EQ(ctx.request.numa.cpus, (std::vector<uint32_t>{6, 7})) << "the pinning stays inside the cpuset";
  EXPECT_EQ(ctx.request.numa.nodes, (std::vector<int32_t>{1})) << "the memory policy is NumaStep's";

  bind.numa_policy = "best-effort";
  TaskSetupContext loose(TaskId{JobId(12), 3, 1}, bind, record);
  ASSERT_TRUE(CgroupStep(CgroupStepOptions{.exclusive_cores_affinity_fallback = true}).Prepare(loose).ok());
  EXPECT_TRUE(loose.request.limits.cpuset_mems.empty()) << "other policies allocate where the worker may";
  EXPECT_FALSE(loose.request.limits.cpuset_required) << "the operator allowed affinity alone";
}

TEST(CgroupStepTest, NoExclusiveCoresNoCpuset) {
  BindTask bind;
  bind.cpu_milli = 2000;
  TaskSetupRecord record;
  TaskSetupContext ctx(TaskId{JobId(12), 3, 1}, bind, record);
  ASSERT_TRUE(CgroupStep().Prepare(ctx).ok());
  EXPECT_TRUE(ctx.request.limits.cpuset_cpus.empty());
  EXPECT_TRUE(ctx.request.numa.cpus.empty());
}

}  // namespace
}  // namespace gpool::worker
