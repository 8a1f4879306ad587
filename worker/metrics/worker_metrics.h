// The worker's /metrics page: the link to the coordinator, the tasks it
// runs, the commands it handled, its health conditions and, where NVML is
// present, each GPU's utilisation and memory in use. Runs on the agent's
// loop thread (through the LoopInbox), where all of these live.
#pragma once

#include <string>
#include <vector>

#include "protocol/health.h"
#include "protocol/types.h"
#include "worker/discovery/nvml_gpu_sampler.h"
#include "worker/link.h"
#include "worker/runner/task_log_janitor.h"

namespace gpool::worker {

struct WorkerMetricsInput {
  std::string node;
  std::string version;
  const LinkStats* link = nullptr;
  bool registered = false;
  int64_t coordinator_silent_ms = -1;  // -1: not connected
  size_t tasks_running = 0;
  const std::vector<GpuInfo>* gpus = nullptr;                // the node's, as registered
  const std::vector<HealthCondition>* health = nullptr;      // null: no health checks
  const std::vector<GpuSample>* samples = nullptr;           // null or empty: no NVML
  const TaskLogJanitor::Totals* task_logs = nullptr;         // null: no log retention
};

std::string RenderWorkerMetrics(const WorkerMetricsInput& input);

}  // namespace gpool::worker
