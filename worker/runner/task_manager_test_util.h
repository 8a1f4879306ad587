// Set-up shared by the TaskManager tests (task_manager_test.cc,
// task_manager_mig_test.cc); not part of the library.
#pragma once

#include <string>

#include "protocol/base/clock.h"
#include "protocol/messages_worker.h"
#include "protocol/types.h"
#include "worker/runner/process_launcher.h"
#include "worker/runner/task_manager.h"
#include "worker/test_util.h"

namespace gpool::worker::testing {

// An rGPU session owner's CurveZMQ public key (Z85), for the server's key file.
inline constexpr const char* kOwnerKey = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";

// MakeGpuNode's "n1" grown to 64 cores and 512 GiB, its GPUs' uuids
// GPU-n1-<i> and each in `mig_mode` ("" off).
inline NodeSpec TaskManagerNode(uint32_t gpus, const std::string& mig_mode = "") {
  NodeSpec node = MakeGpuNode(gpus);
  node.cpu_milli = 64000;
  node.memory_mib = 512 * 1024;
  for (GpuInfo& gpu : node.gpus) {
    gpu.uuid = "GPU-n1-" + std::to_string(gpu.index);
    gpu.mig_mode = mig_mode;
  }
  return node;
}

// Options for `node` with logs under `dir`/tasks; a test adds what it needs.
inline TaskManagerOptions TaskManagerTestOptions(const NodeSpec& node, const TempDir& dir, ProcessLauncher* launcher,
                                                 const Clock* clock, const CapturedLog& log) {
  TaskManagerOptions options;
  options.node = node;
  options.log_dir = dir.path() + "/tasks";
  options.launcher = launcher;
  options.clock = clock;
  options.logger = log.logger();
  return options;
}

// Task 0 of job `job` on GPU 1 running `python train.py`.
inline BindTask OneGpuBind(uint64_t job) {
  BindTask bind;
  bind.task = TaskId{JobId(job), 0, 0};
  bind.job_name = "job" + std::to_string(job);
  bind.num_tasks = 1;
  bind.command = {"python", "train.py"};
  bind.gpu_indices = {1};
  return bind;
}

inline bool HasEnv(const LaunchRequest& request, const std::string& entry) {
  for (const auto& e : request.env) {
    if (e == entry) return true;
  }
  return false;
}

}  // namespace gpool::worker::testing
