#include "control/views.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "control/session_view.h"
#include "protocol/event.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "topology/cpulist.h"

namespace gpool::control {

std::optional<std::string> CreditPendingText(const state::JobRecord& job, const state::ClusterState& state) {
  if (job.state != JobState::kPending) return std::nullopt;
  // As BuildPending decides: a job with a task placed keeps its place.
  for (const auto& task : job.tasks) {
    if (task.state != TaskState::kPending) return std::nullopt;
  }
  const std::string account = state.CreditAccountOf(job.spec.queue);
  const CreditAccount* record = account.empty() ? nullptr : state.billing().FindAccount(account);
  if (record == nullptr || record->balance_micro() > 0) return std::nullopt;
  topology::PendingReason reason{.code = topology::PendingCode::kQueueOutOfCredit,
                                 .need = static_cast<uint64_t>(-record->balance_micro()),
                                 .queue = job.spec.queue,
                                 .resource = account};
  return topology::RenderPendingReason(reason);
}

std::vector<std::string> PendingTexts(const state::JobRecord& job) {
  std::vector<std::string> texts = job.legacy_reasons();
  for (const auto& reason : job.reasons()) texts.push_back(topology::RenderPendingReason(reason));
  return texts;
}

JobSummary ToJobSummary(const state::JobRecord& job, int64_t now_ms) {
  JobSummary s;
  s.job_id = job.id.value();
  s.name = job.spec.name;
  s.queue = job.spec.queue;
  s.priority = job.spec.priority;
  s.priority_class = job.spec.priority_class;
  s.restarts = job.restarts();
  s.restart_reason = job.restart_reason();
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
  if (!job.failure().empty()) {
    s.reason = job.failure();
  } else if (!job.reasons().empty()) {
    s.reason = topology::RenderPendingReason(job.reasons().front());
  } else if (!job.legacy_reasons().empty()) {
    s.reason = job.legacy_reasons().front();
  } else if (job.cancel_requested && !IsTerminal(job.state)) {
    s.reason = "cancelling";
  }
  s.session = ToSessionInfo(job, now_ms);
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
  t.message = task.message();
  t.grant = task.grant();
  return t;
}

// Issue 50: each group with scale rules as the coordinator has it. The
// cool-down counts from the job's last change (any group's), as the scale
// driver counts it (DecideScale).
std::vector<GroupScaleStatus> ToScaleStatus(const state::JobRecord& job, int64_t now_ms) {
  std::vector<GroupScaleStatus> out;
  for (uint32_t g = 0; g < job.spec.tasks.size(); ++g) {
    const TaskGroupSpec& group = job.spec.tasks[g];
    if (!group.scale.Enabled()) continue;
    GroupScaleStatus status;
    status.group = group.name;
    status.min = group.MinReplicas();
    status.max = group.replicas;
    status.target = job.ReplicaTarget(g);
    status.cooldown_ms = group.scale.cooldown_ms;
    const int64_t until = job.scaled_ms() + static_cast<int64_t>(group.scale.cooldown_ms);
    if (job.scaled_ms() != 0 && !IsTerminal(job.state) && now_ms < until) {
      status.cooldown_left_ms = static_cast<uint64_t>(until - now_ms);
    }
    status.last = job.LastScale(g);
    out.push_back(std::move(status));
  }
  return out;
}

GetJobReply ToJobDetail(const state::JobRecord& job, const state::ClusterState& state, int64_t now_ms) {
  GetJobReply reply;
  reply.scale = ToScaleStatus(job, now_ms);
  reply.summary = ToJobSummary(job, now_ms);
  reply.spec = job.spec;
  for (const auto& task : job.tasks) reply.tasks.push_back(ToTaskInfo(job, task, state));
  reply.reasons = PendingTexts(job);
  // The scheduler no longer sees such a job, so its last reasons are stale.
  if (auto credit = CreditPendingText(job, state)) {
    reply.reasons = {*credit};
    reply.summary.reason = *credit;
  }
  if (!job.failure().empty()) reply.reasons.insert(reply.reasons.begin(), job.failure());
  return reply;
}

NodeSummary ToNodeSummary(const state::NodeRecord& node, bool devices, const state::ClusterState* state) {
  NodeSummary s;
  s.name = node.spec.name;
  s.state = std::string(ToString(node.state));
  if (node.cordoned) s.state += ",Cordoned";
  s.hostname = node.spec.hostname;
  // Distinct models, sorted, and distinct devices in use, counted without a
  // set's allocation per device: the change feed renders every node a plan
  // binds to (issue 49).
  for (const auto& gpu : node.spec.gpus) {
    if (node.GpuUsable(gpu)) ++s.gpus_total;
    if (std::find(s.gpu_models.begin(), s.gpu_models.end(), gpu.model) == s.gpu_models.end()) {
      s.gpu_models.push_back(gpu.model);
    }
  }
  std::sort(s.gpu_models.begin(), s.gpu_models.end());
  // A device counts as used when held whole or by any tenant.
  s.gpus_used = static_cast<uint32_t>(node.gpu_owner.size());
  for (const auto& [index, tenants] : node.gpu_tenants) {
    if (node.gpu_owner.count(index) == 0) ++s.gpus_used;
  }
  s.cpu_milli_total = node.spec.cpu_milli;
  s.cpu_milli_used = node.cpu_milli_used;
  s.memory_mib_total = node.spec.memory_mib;
  s.memory_mib_used = node.memory_mib_used;
  s.tasks = static_cast<uint32_t>(node.tasks.size());
  s.last_seen_ms = node.last_seen_ms;
  s.cordoned = node.cordoned;
  s.pool = node.pool;
  s.pool_queue = node.pool_queue;
  s.labels = node.spec.labels;
  for (const auto& [key, value] : node.admin_labels) s.labels[key] = value;
  s.taints = node.taints;
  s.cordon_reason = node.cordon_reason;
  s.health = node.AllHealth();
  // Time-sliced GPUs in the summary itself: `gpool nodes` shows them
  // without asking for devices.
  for (const auto& gpu : node.spec.gpus) {
    if (gpu.time_slices < 2) continue;
    ++s.time_sliced_gpus;
    s.time_slices += gpu.time_slices;
    auto held = node.gpu_tenants.find(gpu.index);
    s.time_slices_used += held == node.gpu_tenants.end() ? 0 : static_cast<uint32_t>(held->second.size());
  }
  if (!devices) return s;
  for (const auto& gpu : node.spec.gpus) {
    DeviceSummary d;
    d.index = gpu.index;
    d.uuid = gpu.uuid;
    d.vendor = gpu.vendor;
    d.model = gpu.model;
    d.memory_mib = gpu.memory_mib;
    d.numa = gpu.numa;
    d.healthy = node.GpuUsable(gpu);
    d.nvlink_peers = gpu.nvlink_peers;
    if (auto owner = node.gpu_owner.find(gpu.index); owner != node.gpu_owner.end()) d.task = owner->second.ToString();
    d.mig_mode = gpu.mig_mode;
    d.time_slices = gpu.time_slices >= 2 ? gpu.time_slices : 0;
    auto tenants = node.gpu_tenants.find(gpu.index);
    if (state != nullptr && tenants != node.gpu_tenants.end()) {
      for (const TaskId& id : tenants->second) {
        if (const auto* task = state->FindTask(id)) d.tenants.push_back(DeviceGrantSummary{id.ToString(), task->grant()});
      }
    }
    for (const auto& instance : gpu.mig_instances) {
      const bool held = std::any_of(d.tenants.begin(), d.tenants.end(), [&](const DeviceGrantSummary& t) {
        return t.grant.mig_profile == instance.profile && t.grant.mig_start == instance.start;
      });
      if (!held) d.mig_free.push_back(instance);
    }
    s.devices.push_back(std::move(d));
  }
  std::stable_sort(s.devices.begin(), s.devices.end(),
                   [](const DeviceSummary& a, const DeviceSummary& b) { return a.index < b.index; });
  const std::vector<int32_t> groups = LinkGroups(s.devices);
  for (size_t i = 0; i < s.devices.size(); ++i) s.devices[i].link_group = groups[i];
  // Exclusive whole cores the node's tasks hold, for each NUMA node's row.
  std::vector<uint32_t> held;
  for (const TaskId& id : node.tasks) {
    const state::TaskRecord* task = state != nullptr ? state->FindTask(id) : nullptr;
    if (task != nullptr) held.insert(held.end(), task->cpu_ids().begin(), task->cpu_ids().end());
  }
  std::sort(held.begin(), held.end());
  for (const auto& numa : node.spec.numa) {
    NumaSummary n;
    n.id = numa.id;
    n.cpu_milli = numa.cpu_milli;
    n.memory_mib = numa.memory_mib;
    n.cpus = numa.cpus;
    for (const auto& d : s.devices) {
      if (d.numa == numa.id) n.gpus.push_back(d.index);
    }
    for (uint32_t id : topology::ParseCpuList(numa.cpus).value_or(std::vector<uint32_t>{})) {
      if (std::binary_search(held.begin(), held.end(), id)) n.exclusive_cpus.push_back(id);
    }
    s.numa.push_back(std::move(n));
  }
  return s;
}

namespace {

QueueSummary SummariseQueue(const state::ClusterState& state, const state::QueueRecord& queue,
                            const std::map<std::string, Quota>& allocations) {
  QueueSummary summary;
  summary.spec = queue.spec;
  summary.granted_classes = queue.granted_classes;
  if (auto it = allocations.find(queue.spec.name); it != allocations.end()) summary.allocated = it->second;
  if (auto it = state.queue_jobs().find(queue.spec.name); it != state.queue_jobs().end()) {
    summary.jobs_pending = it->second[0];
    summary.jobs_running = it->second[1];
  }
  return summary;
}

}  // namespace

ListQueuesReply ToQueueList(const state::ClusterState& state) {
  ListQueuesReply reply;
  const auto allocations = state.QueueAllocations();
  std::map<std::string, std::vector<const state::QueueRecord*>> children;
  for (const auto& [name, queue] : state.queues()) {
    if (!queue.spec.parent.empty()) children[queue.spec.parent].push_back(&queue);
  }
  // Depth-first from root; a queue whose parent vanished is listed last.
  std::set<std::string> listed;
  std::vector<const state::QueueRecord*> stack;
  if (const auto* root = state.FindQueue("root")) stack.push_back(root);
  while (!stack.empty()) {
    const auto* queue = stack.back();
    stack.pop_back();
    if (!listed.insert(queue->spec.name).second) continue;
    reply.queues.push_back(SummariseQueue(state, *queue, allocations));
    auto& kids = children[queue->spec.name];
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
  for (const auto& [name, queue] : state.queues()) {
    if (!listed.count(name)) reply.queues.push_back(SummariseQueue(state, queue, allocations));
  }
  return reply;
}

QueueSummary ToQueueSummary(const state::ClusterState& state, const std::string& name) {
  const auto* queue = state.FindQueue(name);
  if (queue == nullptr) {
    QueueSummary gone;
    gone.spec.name = name;
    return gone;
  }
  return SummariseQueue(state, *queue, state.QueueAllocations());
}

ExplainJobReply ToExplanation(const state::JobRecord& job, const state::ClusterState& state, int64_t now_ms) {
  ExplainJobReply reply;
  reply.job = ToJobSummary(job, now_ms);
  if (!job.failure().empty()) reply.reasons.push_back(job.failure());
  auto pending = PendingTexts(job);
  if (auto credit = CreditPendingText(job, state)) pending = {*credit};
  reply.reasons.insert(reply.reasons.end(), pending.begin(), pending.end());
  for (const auto& task : job.tasks) {
    if (task.stop_requested && !IsTerminal(task.state)) {
      reply.reasons.push_back("task " + task.id.ToString() + " stopping: " + task.message());
    }
  }
  const auto allocations = state.QueueAllocations();
  std::string at = job.spec.queue;
  for (size_t steps = 0; !at.empty() && steps <= state.queues().size(); ++steps) {
    const auto* queue = state.FindQueue(at);
    if (queue == nullptr) break;
    reply.queue_path.push_back(SummariseQueue(state, *queue, allocations));
    at = queue->spec.parent;
  }
  auto rank = [](const state::JobRecord& j) {
    const PriorityClass cls = PriorityClassFromString(j.spec.priority_class).value_or(PriorityClass::kMedium);
    return std::make_tuple(-static_cast<int>(cls), -static_cast<int64_t>(j.spec.priority), j.arrival);
  };
  if (job.state == JobState::kPending) {
    for (uint64_t id : state.pending_jobs()) {
      const auto* other = state.FindJob(JobId(id));
      if (other != nullptr && other->id != job.id && other->spec.queue == job.spec.queue &&
          other->state == JobState::kPending && rank(*other) < rank(job)) {
        ++reply.jobs_ahead;
      }
    }
  }
  return reply;
}

ListEventsReply ToEventList(const state::ClusterState& state, const ListEvents& request) {
  ListEventsReply reply;
  const auto& events = state.events();
  reply.first_kept_seq = events.empty() ? 0 : events.front().seq;
  reply.last_seq = std::max(request.after_seq, state.last_event_seq());
  const uint32_t limit = std::clamp<uint32_t>(request.limit, 1, kMaxEventsPerReply);
  const uint64_t first = events.empty() ? 0 : events.front().seq;
  const size_t start = request.after_seq < first ? 0 : static_cast<size_t>(request.after_seq - first + 1);
  for (size_t i = start; i < events.size(); ++i) {
    const ClusterEvent& event = events[i];
    if ((!request.node.empty() && event.node != request.node) || (request.job != 0 && event.job != request.job)) {
      continue;
    }
    if (reply.events.size() == limit) {
      reply.last_seq = events[i - 1].seq;  // the next request continues here
      break;
    }
    reply.events.push_back(event);
  }
  return reply;
}

Status JobNotFound(const state::ClusterState& state, uint64_t job_id) {
  const std::string job = "job " + std::to_string(job_id);
  if (!state.WasForgotten(JobId(job_id))) return Status::NotFound(job + " does not exist");
  std::string what = "finished";
  if (const state::ForgottenJob* summary = state.FindForgotten(JobId(job_id)); summary != nullptr) {
    char hours[32];
    std::snprintf(hours, sizeof(hours), "%.1f", static_cast<double>(summary->gpu_ms) / 3'600'000.0);
    what += " (" + std::string(ToString(static_cast<JobState>(summary->state))) + ", " + hours + " GPU-hours)";
  }
  return Status::NotFound(job + " " + what +
                          " and was compacted away by the coordinator's retention of finished jobs "
                          "(--retain-finished-ms, --retain-finished-jobs); its usage stays in the accounting totals");
}

}  // namespace gpool::control
