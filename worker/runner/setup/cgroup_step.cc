#include "worker/runner/setup/cgroup_step.h"

#include "worker/runner/task_env.h"

namespace gpool::worker {

Status CgroupStep::Prepare(TaskSetupContext& ctx) {
  ctx.request.cgroup = TaskCgroupName(ctx.id);
  // Assigned whole: device rules come later (isolation) and add to these.
  ctx.request.limits = CgroupLimits{.cpu_milli = ctx.bind.cpu_milli, .memory_mib = ctx.bind.memory_mib};
  return Status::Ok();
}

}  // namespace gpool::worker
