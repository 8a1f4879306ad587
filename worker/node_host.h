// NodeHost: the agent's LinkHost (link_host.h), assembled from the parts of
// a worker: the TaskManager (binds, preempts, events, logs), the ExecManager
// (`gpool exec`), the GPU samplers, the HealthMonitor and the node's labels
// (LabelOverlay: the operator's, as the coordinator pushes them). Node status for a
// heartbeat is put together here, not in the Link: with a GpuUsageSampler,
// each heartbeat samples it once (only while some task runs) and carries each
// running task's GPU memory (task_usage.h maps processes to tasks); the same
// sample feeds the TaskManager's bypass catch (EnforceShareMemory: a GPU share
// over its memory is stopped), so there is no second round of NVML queries.
//
// Ownership: none; every part must outlive the host. One thread (the agent's).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "protocol/health.h"
#include "protocol/messages_exec.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "worker/discovery/nvml_gpu_sampler.h"
#include "worker/health/health_monitor.h"
#include "worker/label_overlay.h"
#include "worker/link_host.h"
#include "worker/runner/exec_manager.h"
#include "worker/runner/gpu_usage_sampler.h"
#include "worker/runner/task_manager.h"

namespace gpool::worker {

struct NodeHostOptions {
  TaskManager* tasks = nullptr;             // required
  ExecManager* exec = nullptr;              // nullptr: exec requests are answered Unavailable
  GpuUsageSampler* gpu_usage = nullptr;     // nullptr: heartbeats carry no usage
  NvmlGpuSampler* gpu_sampler = nullptr;    // per-GPU utilisation in heartbeats; nullptr: none
  const HealthMonitor* health = nullptr;    // nullptr: no health reported
  LabelOverlay* labels = nullptr;           // the operator's labels go here; nullptr: not taken
  std::string proc_root = "/proc";          // where processes are traced to tasks; tests use a fake tree
  // Called with each renewed lease (LinkHost::RenewLease); nullptr: no lease kept.
  std::function<void(int64_t sent_ms, int64_t lease_ms)> renew_lease;
};

class NodeHost final : public LinkHost {
 public:
  explicit NodeHost(NodeHostOptions options) : options_(std::move(options)) {}

  const NodeSpec& node() const override { return options_.tasks->node(); }
  std::vector<TaskReport> TaskReports() const override { return options_.tasks->Reports(); }
  void FillStatus(Heartbeat& heartbeat) override;

  uint64_t health_version() const override { return options_.health ? options_.health->version() : 0; }
  std::vector<HealthCondition> health() const override {
    return options_.health ? options_.health->conditions() : std::vector<HealthCondition>{};
  }
  uint64_t health_rounds() const override { return options_.health ? options_.health->rounds() : 0; }

  uint64_t labels_digest() const override { return options_.labels ? options_.labels->digest() : 0; }
  Status SetLabels(std::map<std::string, std::string> labels) override;

  const std::map<uint64_t, TaskEvent>& events() const override { return options_.tasks->Outbox(); }
  void AckEvent(uint64_t seq) override { options_.tasks->AckEvent(seq); }

  Status Bind(const BindTask& bind) override { return options_.tasks->Bind(bind); }
  void Preempt(const PreemptTask& preempt) override { options_.tasks->Preempt(preempt); }
  Result<FetchLogReply> TailLog(const TaskId& task, uint64_t max_bytes) const override {
    return options_.tasks->TailLog(task, max_bytes);
  }
  Result<ExecStartReply> ExecStart(const TaskExecStart& request) override;
  Result<ExecPollReply> ExecPoll(const TaskExecPoll& request) override;
  Status ExecSignal(const TaskExecSignal& request) override;

  void RenewLease(int64_t sent_ms, int64_t lease_ms) override {
    if (options_.renew_lease) options_.renew_lease(sent_ms, lease_ms);
  }

 private:
  NodeHostOptions options_;
};

}  // namespace gpool::worker
