// Who the task runs as and what it may reach (task_isolation.h): its
// identity, PID and mount namespaces, its own working and temp directory,
// its files given to it (its log, its share's files, an rGPU server's key),
// and the GPU device nodes it was not granted denied in its cgroup
// (device_rules.h; decided with the rest, by ApplyTaskIsolation, since they
// exist only for an isolated task). Last in the chain: it gives the task the
// files the steps before it made, and needs the state directory (made
// root's alone, it holds the job's env). Its working directory is not
// undone: it goes with the task's record (TaskManager's expiry), the task's
// log still beside it.
#pragma once

#include <string>

#include "worker/runner/setup/task_setup_step.h"
#include "worker/runner/task_isolation.h"

namespace gpool::worker {

class IsolationStep final : public TaskSetupStep {
 public:
  IsolationStep(TaskIsolationOptions options, std::string log_dir, NodeSpec node)
      : options_(std::move(options)), log_dir_(std::move(log_dir)), node_(std::move(node)) {}

  std::string_view Name() const override { return "isolation"; }
  // ApplyTaskIsolation over the request; its error (a bind mapped to root
  // without --task-user root, a directory that cannot be given to the task).
  Status Prepare(TaskSetupContext& ctx) override;

 private:
  TaskIsolationOptions options_;
  std::string log_dir_;
  NodeSpec node_;
};

}  // namespace gpool::worker
