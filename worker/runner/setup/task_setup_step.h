// A task's start is a chain of small setup steps (issue 47, after Nomad's
// taskrunner hooks): each adds its part to the launch (environment, devices,
// files, identity) and knows how to take back what it made. Kept apart so
// each can be read and tested alone, and so a start that fails half way
// releases exactly what was made before the failure, in reverse order,
// rather than a hand-kept list of what might need releasing.
//
// Steps are stateless services built once per TaskManager: what a task's
// steps made that must outlive the start (its MIG instances, its state
// directory) is kept in its record (TaskSetupRecord), so a task adopted from
// a previous worker process, which no step prepared in this process, is
// released the same way when it ends.
//
// Thread-safety: the TaskManager's thread only, like the TaskManager.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/messages_worker.h"
#include "protocol/types.h"
#include "worker/runner/device_env.h"
#include "worker/runner/process_launcher.h"

namespace gpool::worker {

// A dynamic MIG instance made for a task (mig_manager.h): destroyed when the
// task ends, or when its start fails after making it.
struct MigInstance {
  uint32_t gpu_index = 0;
  std::string profile;
  uint32_t start = 0;
};

// What a task's setup leaves in its record, for its release at the end.
struct TaskSetupRecord {
  std::vector<MigInstance> mig_created;  // dynamic MIG instances to destroy when it ends
  std::string state_dir;  // its state directory once persisted or adopted; empty before
};

// One start (or one release) of one task: what the steps read and fill in.
struct TaskSetupContext {
  TaskSetupContext(const TaskId& task, BindTask& task_bind, TaskSetupRecord& task_record)
      : id(task), bind(task_bind), record(task_record) {}

  TaskId id;
  // The task's bind, in its record: the rGPU step fills in the server's key,
  // which the started event and an adopting worker need.
  BindTask& bind;
  TaskSetupRecord& record;
  // What earlier steps found for the environment step (interposer, MIG).
  TaskEnvOptions env;
  // What the launcher gets; steps add to it in chain order.
  LaunchRequest request;
  // Files the task's identity is given (isolation), beyond its log and its
  // share's files; the rGPU server's key.
  std::vector<std::string> owned_files;
};

class TaskSetupStep {
 public:
  virtual ~TaskSetupStep() = default;

  // A short name for logs ("mig", "env", ...).
  virtual std::string_view Name() const = 0;
  // Adds this step's part to `ctx`, or fails with a typed Status (the task
  // then fails to start with that message). A failed Prepare leaves nothing
  // of its own behind; the chain undoes the steps before it.
  virtual Status Prepare(TaskSetupContext& ctx) = 0;
  // Releases what Prepare made, after a later step or the launch failed.
  // Idempotent; failures are logged, never returned (there is nothing left
  // to fail).
  virtual void Undo(TaskSetupContext& /*ctx*/) {}
  // Releases what Prepare made once the task's process is reaped (whatever
  // ended it), for tasks this process started and tasks it adopted alike.
  // Default: as Undo.
  virtual void Release(TaskSetupContext& ctx) { Undo(ctx); }
  // What the task's log says before a failure of this step's, e.g.
  // "task not started" (the log is where users look first, FetchLog);
  // empty: nothing is written there.
  virtual std::string_view LogNote() const { return "task not started"; }
};

}  // namespace gpool::worker
