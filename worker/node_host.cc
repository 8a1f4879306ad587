#include "worker/node_host.h"

#include <spdlog/spdlog.h>

#include "protocol/messages_exec.h"
#include "protocol/messages_worker.h"
#include "worker/runner/task_usage.h"

namespace gpool::worker {
namespace {

Status NoExec() { return Status::Unavailable("this worker does not serve exec"); }

}  // namespace

void NodeHost::FillStatus(Heartbeat& heartbeat) {
  heartbeat.running = options_.tasks->Running();
  const auto& pids = options_.tasks->RunningPids();
  // No task process, nothing to attribute: skip the NVML queries.
  if (options_.gpu_usage != nullptr && !pids.empty()) {
    heartbeat.usage = UsageByTask(options_.gpu_usage->Sample(), pids, ProcStatLookup(options_.proc_root));
    options_.tasks->EnforceShareMemory(heartbeat.usage);
  }
  if (options_.gpu_sampler != nullptr) {
    for (const GpuSample& sample : options_.gpu_sampler->Sample()) {
      if (!sample.known) continue;  // unknown is left out, never sent as idle
      heartbeat.gpus.push_back(GpuUtilization{sample.index, sample.utilization_pct, sample.memory_used_bytes >> 20});
    }
  }
}

Status NodeHost::SetLabels(std::map<std::string, std::string> labels) {
  if (options_.labels == nullptr) return LinkHost::SetLabels(std::move(labels));
  const size_t count = labels.size();
  if (Status status = options_.labels->SetOperatorLabels(std::move(labels)); !status.ok()) return status;
  spdlog::info("node labels taken from the coordinator labels={} digest={}", count, options_.labels->digest());
  return Status::Ok();
}

Result<ExecStartReply> NodeHost::ExecStart(const TaskExecStart& request) {
  if (options_.exec == nullptr) return NoExec();
  return options_.exec->Start(request);
}

Result<ExecPollReply> NodeHost::ExecPoll(const TaskExecPoll& request) {
  if (options_.exec == nullptr) return NoExec();
  return options_.exec->Poll(request);
}

Status NodeHost::ExecSignal(const TaskExecSignal& request) {
  if (options_.exec == nullptr) return NoExec();
  return options_.exec->Signal(request);
}

}  // namespace gpool::worker
