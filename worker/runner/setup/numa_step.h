// Which CPUs and memory the task is pinned to (numa_pinning.h): decided
// here from the bind and the node spec, applied by the launcher in the
// child (numa_apply.h), so nothing is made that would need undoing.
#pragma once

#include "worker/runner/setup/task_setup_step.h"

namespace gpool::worker {

class NumaStep final : public TaskSetupStep {
 public:
  explicit NumaStep(NodeSpec node) : node_(std::move(node)) {}

  std::string_view Name() const override { return "numa"; }
  // Sets request.numa (empty: not pinned); never fails.
  Status Prepare(TaskSetupContext& ctx) override;

 private:
  NodeSpec node_;
};

}  // namespace gpool::worker
