// Dynamic MIG (a bind's MIG profile on a GPU with mig_mode "dynamic",
// mig_manager.h): the instance is made before the launch and the task is
// given its uuid (device_env.h, through ctx.env.mig_uuids); it is destroyed
// when the process is reaped (whatever ended it: exit, preemption, shutdown)
// or when the start fails after making it. A failed Destroy is logged and
// not retried: the instance then blocks its placement until an operator
// removes it, which is better than killing the worker. Instances of tasks
// that outlive the worker are left alone (nothing destroys on startup); a
// resent bind reuses them (MigManager::Create is idempotent).
#pragma once

#include <memory>
#include <vector>

#include <spdlog/logger.h>

#include "protocol/messages_worker.h"
#include "worker/runner/mig_manager.h"
#include "worker/runner/setup/task_setup_step.h"

namespace gpool::worker {

class MigInstanceStep final : public TaskSetupStep {
 public:
  // `mig` not owned; nullptr: nothing is made and tasks get the simulated id.
  MigInstanceStep(NodeSpec node, MigManager* mig, std::shared_ptr<spdlog::logger> logger);

  std::string_view Name() const override { return "mig"; }
  // Makes the bind's dynamic instances (recorded in ctx.record.mig_created
  // as they are made); MigManager's error when one cannot be made, after
  // destroying those made before it.
  Status Prepare(TaskSetupContext& ctx) override;
  // Destroys ctx.record.mig_created; failures are logged.
  void Undo(TaskSetupContext& ctx) override;

  // The dynamic instances a bind would have made: those of a task adopted
  // from a previous worker process, destroyed when it ends.
  std::vector<MigInstance> DynamicInstances(const BindTask& bind) const;

 private:
  NodeSpec node_;
  MigManager* mig_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace gpool::worker
