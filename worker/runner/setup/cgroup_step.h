// The task's cgroup (task_cgroup.h): its name and its CPU and memory
// requests as limits. The launcher (or the task's supervisor) creates it,
// joins it before exec and removes it once empty, since the cgroup must
// outlive this worker process with the task; so this step only names it.
#pragma once

#include "worker/runner/setup/task_setup_step.h"

namespace gpool::worker {

class CgroupStep final : public TaskSetupStep {
 public:
  std::string_view Name() const override { return "cgroup"; }
  // Sets request.cgroup and request.limits' CPU and memory; never fails.
  Status Prepare(TaskSetupContext& ctx) override;
};

}  // namespace gpool::worker
