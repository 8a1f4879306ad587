// The steps of a task's start, run in order (task_setup_step.h). If step k
// fails, steps k-1..0 are undone in reverse order and the failure is
// returned; the TaskManager records it as the task's "failed" event
// (exit_code 127). Undo and Release run every step, last first.
//
// Thread-safety: the TaskManager's thread only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "worker/runner/setup/task_setup_step.h"

namespace gpool::worker {

class TaskSetupChain {
 public:
  explicit TaskSetupChain(std::shared_ptr<spdlog::logger> logger = nullptr);

  // Appends a step; steps run in the order they were added.
  TaskSetupChain& Add(std::unique_ptr<TaskSetupStep> step);

  // Runs every step's Prepare. On a failure: writes the failing step's
  // LogNote and the message to ctx.request.log_path (when both are set),
  // undoes the steps before it, and returns the failure.
  Status Prepare(TaskSetupContext& ctx);
  // Undoes every step, last first: the launch failed after a whole Prepare.
  void Undo(TaskSetupContext& ctx);
  // Releases every step, last first: the task's process was reaped.
  void Release(TaskSetupContext& ctx);

  size_t size() const { return steps_.size(); }

 private:
  std::shared_ptr<spdlog::logger> log_;
  std::vector<std::unique_ptr<TaskSetupStep>> steps_;
};

}  // namespace gpool::worker
