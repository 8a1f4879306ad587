// A task that outlives the worker (TaskManagerOptions::adopt_tasks): its
// bind is written to its state directory before the launch, since a task
// that nothing on disk names could not be adopted by a restarted worker.
// The launcher's supervisor then shares the directory (supervisor_state.h).
// It is not undone with a failed start: it goes with the task's record
// (TaskManager's expiry), like everything else a restart must find.
#pragma once

#include <string>

#include "worker/runner/setup/task_setup_step.h"

namespace gpool::worker {

class StateDirStep final : public TaskSetupStep {
 public:
  // `adopt_tasks` false: the step does nothing.
  StateDirStep(bool adopt_tasks, std::string state_root)
      : adopt_tasks_(adopt_tasks), state_root_(std::move(state_root)) {}

  std::string_view Name() const override { return "state"; }
  // Writes <state_root>/<job>.<index>.<attempt>.state/bind and sets
  // request.state_dir and ctx.record.state_dir; IoError when it cannot.
  Status Prepare(TaskSetupContext& ctx) override;
  // The failure is the event's message alone, as before: nothing in the log.
  std::string_view LogNote() const override { return ""; }

 private:
  bool adopt_tasks_;
  std::string state_root_;
};

}  // namespace gpool::worker
