#include "worker/runner/setup/cgroup_step.h"

#include "worker/runner/task_env.h"

namespace gpool::worker {

Status CgroupStep::Prepare(TaskSetupContext& ctx) {
  ctx.request.cgroup = TaskCgroupName(ctx.id);
  // Assigned whole: device rules come later (isolation) and add to these.
  ctx.request.limits = CgroupLimits{.cpu_milli = ctx.bind.cpu_milli, .memory_mib = ctx.bind.memory_mib};
  const std::vector<uint32_t>& cpus = ctx.bind.exclusive_cpus;
  if (cpus.empty()) return Status::Ok();
  ctx.request.limits.cpuset_cpus = cpus;
  ctx.request.limits.cpuset_required = !options_.exclusive_cores_affinity_fallback;
  // single-numa-node keeps its memory on the node its cores were taken
  // from; other policies allocate where the worker may.
  if (ctx.bind.numa_node >= 0 && ctx.bind.numa_policy == "single-numa-node") {
    ctx.request.limits.cpuset_mems = std::to_string(ctx.bind.numa_node);
  }
  ctx.request.numa.cpus = cpus;
  return Status::Ok();
}

}  // namespace gpool::worker
