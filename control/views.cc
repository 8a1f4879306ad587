#include "control/views.h"

#include <set>

namespace gpool::control {

JobSummary ToJobSummary(const state::JobRecord& job) {
  JobSummary s;
  s.job_id = job.id.value();
  s.name = job.spec.name;
  s.queue = job.spec.queue;
  s.priority = job.spec.priority;
  s.state = std::string(ToString(job.state));
  s.tasks_total = static_cast<uint32_t>(job.tasks.size());
  for (const auto& task : job.tasks) {
    if (task.state == TaskState::kRunning) ++s.tasks_running;
    if (IsTerminal(task.state)) ++s.tasks_finished;
    s.gpus += job.spec.tasks[task.group].resources.gpus;
  }
  s.submit_ms = job.submit_ms;
  s.start_ms = job.start_ms;
  s.finish_ms = job.finish_ms;
  if (!job.failure.empty()) {
    s.reason = job.failure;
  } else if (!job.reasons.empty()) {
    s.reason = job.reasons.front();
  } else if (job.cancel_requested && !IsTerminal(job.state)) {
    s.reason = "cancelling";
  }
  return s;
}

TaskInfo ToTaskInfo(const state::JobRecord& job, const state::TaskRecord& task, const state::ClusterState& state) {
  TaskInfo t;
  t.index = task.id.index;
  t.attempt = task.id.attempt;
  t.group = job.spec.tasks[task.group].name;
  t.state = std::string(ToString(task.state));
  t.node = task.node;
  t.gpu_indices = task.gpu_indices;
  t.gpu_uuids = state.GpuUuids(task);
  t.cpu_milli = task.cpu_milli;
  t.memory_mib = task.memory_mib;
  t.pid = task.pid;
  t.exit_code = task.exit_code;
  t.signal = task.signal;
  t.start_ms = task.start_ms;
  t.finish_ms = task.finish_ms;
  t.message = task.message;
  return t;
}

GetJobReply ToJobDetail(const state::JobRecord& job, const state::ClusterState& state) {
  GetJobReply reply;
  reply.summary = ToJobSummary(job);
  reply.spec = job.spec;
  for (const auto& task : job.tasks) reply.tasks.push_back(ToTaskInfo(job, task, state));
  reply.reasons = job.reasons;
  if (!job.failure.empty()) reply.reasons.insert(reply.reasons.begin(), job.failure);
  return reply;
}

NodeSummary ToNodeSummary(const state::NodeRecord& node) {
  NodeSummary s;
  s.name = node.spec.name;
  s.state = std::string(ToString(node.state));
  if (node.cordoned) s.state += ",Cordoned";
  s.hostname = node.spec.hostname;
  std::set<std::string> models;
  for (const auto& gpu : node.spec.gpus) {
    if (gpu.healthy) ++s.gpus_total;
    models.insert(gpu.model);
  }
  s.gpus_used = static_cast<uint32_t>(node.gpu_owner.size());
  s.cpu_milli_total = node.spec.cpu_milli;
  s.cpu_milli_used = node.cpu_milli_used;
  s.memory_mib_total = node.spec.memory_mib;
  s.memory_mib_used = node.memory_mib_used;
  s.gpu_models.assign(models.begin(), models.end());
  s.tasks = static_cast<uint32_t>(node.tasks.size());
  s.last_seen_ms = node.last_seen_ms;
  s.cordoned = node.cordoned;
  s.pool = node.pool;
  s.labels = node.spec.labels;
  for (const auto& [key, value] : node.admin_labels) s.labels[key] = value;
  return s;
}

}  // namespace gpool::control
