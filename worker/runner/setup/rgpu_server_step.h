// An rGPU session (rgpu_server.h): the task's command becomes the session's
// server, with a key drawn for it here (in the bind, so an adopting worker
// and the started event know it). The wait for the server to report its
// endpoint is the TaskManager's life cycle (task_manager_rgpu.cc), not
// setup: it spans loop turns after the launch. The key and endpoint files
// go when the start fails and when the server is reaped.
#pragma once

#include <string>

#include "worker/runner/rgpu_server.h"
#include "worker/runner/setup/task_setup_step.h"

namespace gpool::worker {

// Where a session's server reports its endpoint: its work directory when it
// runs as the session owner (isolation), who cannot create files in the
// tasks directory (0711, root's); else the tasks directory.
std::string RgpuEndpointFileOf(const std::string& log_dir, bool isolated, const TaskId& id);

struct RgpuServerStepOptions {
  RgpuOptions rgpu;
  std::string log_dir;
  bool isolated = false;           // task isolation on (task_isolation.h)
  std::string real_driver;         // the node's real libcuda.so.1 (share_enforcement.h)
  std::string cuda_intercept_lib;  // HAMi-core, when shares use it
};

class RgpuServerStep final : public TaskSetupStep {
 public:
  explicit RgpuServerStep(RgpuServerStepOptions options) : options_(std::move(options)) {}

  std::string_view Name() const override { return "rgpu"; }
  // For a session (bind.rgpu.owner_key set): request.argv becomes the
  // server's command line and its key file one of the task's owned files.
  // PrepareRgpuServer's error when this node runs no server or cannot.
  Status Prepare(TaskSetupContext& ctx) override;
  // Removes the session's key and endpoint files; nothing for other tasks.
  void Undo(TaskSetupContext& ctx) override;
  std::string_view LogNote() const override { return "session not started"; }

 private:
  RgpuServerStepOptions options_;
};

}  // namespace gpool::worker
