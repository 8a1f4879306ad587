#include "worker/metrics/worker_metrics.h"

#include <map>

#include "protocol/metrics/exposition.h"

namespace gpool::worker {

namespace {

using metrics::Exposition;
using metrics::Type;

void Gpus(Exposition& out, const WorkerMetricsInput& in) {
  if (in.gpus == nullptr || in.samples == nullptr || in.samples->empty()) return;
  std::map<uint32_t, const GpuInfo*> by_index;
  for (const auto& gpu : *in.gpus) by_index[gpu.index] = &gpu;
  struct Row {
    std::string index, uuid, model;
    const GpuSample* sample;
  };
  std::vector<Row> rows;
  for (const auto& sample : *in.samples) {
    if (!sample.known) continue;  // unknown is absent, never 0
    auto it = by_index.find(sample.index);
    rows.push_back(Row{std::to_string(sample.index), it == by_index.end() ? "" : it->second->uuid,
                       it == by_index.end() ? "" : it->second->model, &sample});
  }
  auto family = [&](const char* name, const char* help, auto value) {
    out.Family(name, Type::kGauge, help);
    for (const auto& row : rows) {
      out.Sample({{"node", in.node}, {"gpu", row.index}, {"uuid", row.uuid}, {"model", row.model}}, value(*row.sample));
    }
  };
  family("gpool_gpu_utilization_ratio", "Fraction of the last NVML sample period the GPU was busy.",
         [](const GpuSample& s) { return s.utilization_pct / 100.0; });
  family("gpool_gpu_memory_used_bytes", "GPU memory in use, as NVML reports it.",
         [](const GpuSample& s) { return static_cast<double>(s.memory_used_bytes); });
  family("gpool_gpu_memory_total_bytes", "GPU memory, as NVML reports it.",
         [](const GpuSample& s) { return static_cast<double>(s.memory_total_bytes); });
}

}  // namespace

std::string RenderWorkerMetrics(const WorkerMetricsInput& in) {
  Exposition out;
  out.Family("gpool_worker_info", Type::kGauge, "This worker: its node and version.");
  out.Sample({{"node", in.node}, {"version", in.version}}, 1);
  out.Single("gpool_worker_registered", Type::kGauge, "1 while the worker is registered with a coordinator.",
             in.registered ? 1 : 0);
  out.Single("gpool_worker_coordinator_silence_seconds", Type::kGauge,
             "Since the coordinator last said anything (-1: not connected).",
             in.coordinator_silent_ms < 0 ? -1.0 : static_cast<double>(in.coordinator_silent_ms) / 1000.0);
  out.Single("gpool_worker_tasks_running", Type::kGauge, "Task processes running on this node.",
             static_cast<double>(in.tasks_running));
  if (in.task_logs != nullptr) {
    out.Single("gpool_worker_task_logs_removed_total", Type::kCounter,
               "Logs of ended tasks removed by the retention (--task-log-retention-hours, --task-logs-max, "
               "--task-logs-max-gib).",
               static_cast<double>(in.task_logs->removed_logs));
    out.Single("gpool_worker_task_logs_removed_bytes_total", Type::kCounter, "Their bytes.",
               static_cast<double>(in.task_logs->removed_bytes));
    out.Single("gpool_worker_task_logs_kept", Type::kGauge,
               "Logs of ended tasks the last retention pass kept (running tasks' not counted).",
               static_cast<double>(in.task_logs->kept_logs));
    out.Single("gpool_worker_task_logs_kept_bytes", Type::kGauge, "Their bytes.",
               static_cast<double>(in.task_logs->kept_bytes));
  }
  const LinkStats& link = *in.link;
  out.Single("gpool_worker_heartbeats_sent_total", Type::kCounter, "Heartbeats sent to the coordinator.",
             static_cast<double>(link.heartbeats_sent));
  out.Single("gpool_worker_registrations_total", Type::kCounter, "Registrations the coordinator accepted.",
             static_cast<double>(link.registrations));
  out.Single("gpool_worker_reconnects_total", Type::kCounter, "Times the worker moved to another coordinator.",
             static_cast<double>(link.reconnects));
  out.Single("gpool_worker_frames_received_total", Type::kCounter, "Frames received from coordinators.",
             static_cast<double>(link.frames_received));
  out.Single("gpool_worker_decode_errors_total", Type::kCounter, "Frames that did not decode.",
             static_cast<double>(link.decode_errors));
  out.Single("gpool_worker_stale_epoch_refusals_total", Type::kCounter,
             "Commands refused because they came from an older leader.",
             static_cast<double>(link.stale_epoch_refusals));
  out.Family("gpool_worker_commands_total", Type::kCounter, "Coordinator commands handled, by type.");
  out.Sample({{"type", "bind"}}, static_cast<double>(link.binds));
  out.Sample({{"type", "preempt"}}, static_cast<double>(link.preempts));
  out.Family("gpool_worker_command_duration_seconds", Type::kHistogram,
             "How long handling a bind or preempt took on the worker.");
  out.Observe({}, link.command_seconds);
  if (in.health != nullptr) {
    std::map<std::pair<std::string, std::string>, uint64_t> conditions;
    for (const auto& condition : *in.health) ++conditions[{condition.kind, condition.severity}];
    out.Family("gpool_worker_health_conditions", Type::kGauge, "Health conditions the worker's checks hold.");
    for (const auto& [key, n] : conditions) {
      out.Sample({{"kind", key.first}, {"severity", key.second}}, static_cast<double>(n));
    }
  }
  Gpus(out, in);
  return out.Take();
}

}  // namespace gpool::worker
