// The task's command and environment: the job's env over what the task
// inherits of the worker's, with gpool's variables and the device part
// (visible GPUs, MIG instances, share limits, NeuronCores) on top
// (task_env.h, device_env.h). After the share and MIG steps, whose files
// and instances it names. Nothing to undo: it only fills the request.
#pragma once

#include <map>
#include <string>

#include "worker/runner/setup/task_setup_step.h"

namespace gpool::worker {

class TaskEnvStep final : public TaskSetupStep {
 public:
  TaskEnvStep(NodeSpec node, std::map<std::string, std::string> base_env)
      : node_(std::move(node)), base_env_(std::move(base_env)) {}

  std::string_view Name() const override { return "env"; }
  // Sets request.argv (the bind's command) and request.env;
  // FailedPrecondition when a MIG instance of the bind is not on the node
  // (the task must not start on another device).
  Status Prepare(TaskSetupContext& ctx) override;

 private:
  NodeSpec node_;
  std::map<std::string, std::string> base_env_;
};

}  // namespace gpool::worker
