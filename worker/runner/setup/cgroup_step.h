// The task's cgroup (task_cgroup.h): its name and its CPU and memory
// requests as limits. The launcher (or the task's supervisor) creates it,
// joins it before exec and removes it once empty, since the cgroup must
// outlive this worker process with the task; so this step only names it.
//
// A task holding exclusive whole cores (BindTask::exclusive_cpus) gets them
// as its cpuset, and as its CPU pinning too: runs after NumaStep, so the
// NUMA pinning cannot name CPUs outside the cpuset, and where the node's
// operator allowed the fallback (no cpuset possible) the affinity remains.
#pragma once

#include "worker/runner/setup/task_setup_step.h"

namespace gpool::worker {

struct CgroupStepOptions {
  // gpool-worker --exclusive-cores-fallback=affinity: where no cpuset can
  // be made, a task with exclusive cores runs pinned by sched_setaffinity
  // alone instead of being refused (a node the operator knows lacks cpusets).
  bool exclusive_cores_affinity_fallback = false;
};

class CgroupStep final : public TaskSetupStep {
 public:
  explicit CgroupStep(CgroupStepOptions options = {}) : options_(options) {}
  std::string_view Name() const override { return "cgroup"; }
  // Sets request.cgroup and request.limits' CPU and memory; never fails.
  Status Prepare(TaskSetupContext& ctx) override;

 private:
  CgroupStepOptions options_;
};

}  // namespace gpool::worker
