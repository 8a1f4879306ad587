#include "worker/runner/setup/numa_step.h"

#include "worker/runner/numa_pinning.h"

namespace gpool::worker {

Status NumaStep::Prepare(TaskSetupContext& ctx) {
  ctx.request.numa = PlanNumaPinning(ctx.bind, node_);
  return Status::Ok();
}

}  // namespace gpool::worker
