// NumaStep: the launch carries the pinning the bind and the node call for
// (numa_pinning.h has the rules), or none.
#include "protocol/messages_worker.h"
#include "worker/runner/setup/numa_step.h"

#include <gtest/gtest.h>

namespace gpool::worker {
namespace {

TEST(NumaStepTest, PinsToTheGpusNodeOrNotAtAll) {
  NodeSpec node;
  node.numa = {{0, 4000, 4096, "0-3"}, {1, 4000, 4096, "4-7"}};
  for (uint32_t i = 0; i < 2; ++i) {
    GpuInfo gpu;
    gpu.index = i;
    gpu.numa = static_cast<int32_t>(i);
    node.gpus.push_back(gpu);
  }
  NumaStep step(node);
  BindTask bind;
  bind.gpu_indices = {1};
  bind.numa_policy = "single-numa-node";
  TaskSetupRecord record;
  TaskSetupContext ctx(TaskId{JobId(1), 0, 0}, bind, record);
  ASSERT_TRUE(step.Prepare(ctx).ok());
  EXPECT_EQ(ctx.request.numa.cpus, (std::vector<uint32_t>{4, 5, 6, 7}));
  EXPECT_TRUE(ctx.request.numa.strict);

  bind.numa_policy = "";
  TaskSetupContext unpinned(TaskId{JobId(2), 0, 0}, bind, record);
  ASSERT_TRUE(step.Prepare(unpinned).ok());
  EXPECT_TRUE(unpinned.request.numa.empty());
}

}  // namespace
}  // namespace gpool::worker
