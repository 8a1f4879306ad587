#include "control/state/cluster_state.h"

#include <algorithm>
#include <atomic>

#include "protocol/validate.h"

namespace gpool::state {
namespace {


uint64_t KeyHash(std::string_view key) { return std::hash<std::string_view>{}(key); }

}  // namespace

ApplyResult ClusterState::Apply(uint64_t index, const Command& command) {
  applied_index_ = std::max(applied_index_, index);
  const int64_t now = command.time_ms;
  return std::visit(
      [&](const auto& body) -> ApplyResult {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, RegisterNodeCmd>) return ApplyRegisterNode(now, body);
        if constexpr (std::is_same_v<T, NodeStateCmd>) return ApplyNodeState(now, body);
        if constexpr (std::is_same_v<T, SubmitJobCmd>) return ApplySubmitJob(index, now, body);
        if constexpr (std::is_same_v<T, CancelJobCmd>) return ApplyCancelJob(now, body);
        if constexpr (std::is_same_v<T, ApplyPlanCmd>) return ApplyPlan(now, body);
        if constexpr (std::is_same_v<T, TaskEventCmd>) return ApplyTaskEvent(now, body);
        if constexpr (std::is_same_v<T, UpdateNodeCmd>) return ApplyUpdateNode(now, body);
        if constexpr (std::is_same_v<T, UpdateQueueCmd>) return ApplyUpdateQueue(body);
      },
      command.body);
}

const NodeRecord* ClusterState::FindNode(std::string_view name) const {
  auto it = nodes_.find(std::string(name));
  return it == nodes_.end() ? nullptr : &it->second;
}

const JobRecord* ClusterState::FindJob(JobId id) const {
  auto it = jobs_.find(id.value());
  return it == jobs_.end() ? nullptr : &it->second;
}

uint64_t ClusterState::FindIdempotent(std::string_view key) const {
  auto [first, last] = idempotency_.equal_range(KeyHash(key));
  for (auto it = first; it != last; ++it) {
    const JobRecord* job = FindJob(JobId(it->second));
    if (job != nullptr && job->idempotency_key == key) return it->second;
  }
  return 0;
}

JobRecord* ClusterState::MutableJob(uint64_t id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const TaskRecord* ClusterState::FindTask(const TaskId& id) const {
  const JobRecord* job = FindJob(id.job);
  if (job == nullptr || id.index >= job->tasks.size()) return nullptr;
  const TaskRecord& task = job->tasks[id.index];
  return task.id == id ? &task : nullptr;
}

std::vector<std::string> ClusterState::GpuUuids(const TaskRecord& task, bool mig_instances) const {
  std::vector<std::string> uuids;
  const NodeRecord* node = FindNode(task.node);
  if (node == nullptr) return uuids;
  for (uint32_t index : task.gpu_indices) {
    for (const auto& gpu : node->spec.gpus) {
      if (gpu.index == index) uuids.push_back(mig_instances ? DeviceUuid(gpu, task.grant()) : gpu.uuid);
    }
  }
  return uuids;
}

ApplyResult ClusterState::ApplyRegisterNode(int64_t now, const RegisterNodeCmd& cmd) {
  ApplyResult result;
  result.status = ValidateNodeSpec(cmd.node);
  if (result.status.ok()) result.status = CheckMigLayouts(cmd.node);
  if (!result.status.ok()) return result;
  NodeRecord& node = nodes_[cmd.node.name];
  if (node.registered_ms == 0) node.registered_ms = now;
  node.spec = cmd.node;
  node.state = NodeState::kReady;
  node.last_seen_ms = now;
  TouchSpec(node);

  std::map<TaskId, const TaskReport*> reported;
  for (const auto& report : cmd.tasks) reported[report.task] = &report;

  // Reconcile: the worker is the authority on which processes exist.
  const std::vector<TaskId> here(node.tasks.begin(), node.tasks.end());
  for (const TaskId& id : here) {
    JobRecord* job = MutableJob(id.job.value());
    if (job == nullptr || id.index >= job->tasks.size()) continue;
    TaskRecord& task = job->tasks[id.index];
    auto it = reported.find(id);
    if (it == reported.end()) {
      // A bound task the worker has not seen yet is still on its way; the
      // dispatcher resends it. A running one the worker does not know is gone.
      if (task.state == TaskState::kRunning) {
        if (!RequeueIfEvicted(*job, task, now)) {
          task.set_message("task was not running when its node re-registered");
          FinishTask(*job, task, TaskState::kLost, now);
        }
        UpdateJobState(*job, now);
      }
      continue;
    }
    const TaskReport& report = *it->second;
    if (report.state == "Running") {
      if (task.state == TaskState::kBound) {
        task.state = TaskState::kRunning;
        task.pid = report.pid;
        if (task.start_ms == 0) task.start_ms = now;
        TrackCommand(task);
        UpdateJobState(*job, now);
      }
      continue;
    }
    auto terminal = TaskStateFromString(report.state);
    if (terminal && IsTerminal(*terminal)) {
      task.exit_code = report.exit_code;
      task.signal = report.signal;
      if (!RequeueIfEvicted(*job, task, now)) {
        FinishTask(*job, task, task.stop_requested ? TaskState::kCancelled : *terminal, now);
      }
      UpdateJobState(*job, now);
    }
  }
  return result;
}

ApplyResult ClusterState::ApplyNodeState(int64_t now, const NodeStateCmd& cmd) {
  ApplyResult result;
  auto it = nodes_.find(cmd.node);
  if (it == nodes_.end()) {
    result.status = Status::NotFound("node '" + cmd.node + "' is not registered");
    return result;
  }
  auto state = NodeStateFromString(cmd.state);
  if (!state) {
    result.status = Status::InvalidArgument("unknown node state '" + cmd.state + "'");
    return result;
  }
  it->second.state = *state;
  it->second.last_seen_ms = now;
  TouchSpec(it->second);
  return result;
}

ApplyResult ClusterState::ApplySubmitJob(uint64_t index, int64_t now, const SubmitJobCmd& cmd) {
  ApplyResult result;
  if (!cmd.idempotency_key.empty()) {
    if (const uint64_t first = FindIdempotent(cmd.idempotency_key); first != 0) {
      result.job_id = first;
      result.duplicate = true;
      return result;
    }
  }
  result.status = ValidateJobSpec(cmd.spec);
  if (!result.status.ok()) return result;
  result.status = CheckSubmitQueue(cmd.spec.queue);
  if (!result.status.ok()) return result;

  JobRecord job;
  job.id = JobId(next_job_id_++);
  job.spec = cmd.spec;
  job.arrival = index;
  job.submit_ms = now;
  job.idempotency_key = cmd.idempotency_key;
  uint32_t task_index = 0;
  for (uint32_t group = 0; group < cmd.spec.tasks.size(); ++group) {
    for (uint32_t replica = 0; replica < cmd.spec.tasks[group].replicas; ++replica) {
      TaskRecord task;
      task.id = TaskId{job.id, task_index++, 0};
      task.group = group;
      job.tasks.push_back(std::move(task));
    }
  }
  result.job_id = job.id.value();
  if (!job.idempotency_key.empty()) idempotency_.emplace(KeyHash(job.idempotency_key), result.job_id);
  pending_.insert(result.job_id);
  ++job_states_[static_cast<size_t>(JobState::kPending)];
  jobs_.emplace(result.job_id, std::move(job));
  return result;
}

ApplyResult ClusterState::ApplyUpdateNode(int64_t /*now*/, const UpdateNodeCmd& cmd) {
  ApplyResult result;
  const UpdateNode& update = cmd.update;
  result.status = ValidateUpdateNode(update);
  if (!result.status.ok()) return result;
  auto it = nodes_.find(update.node);
  if (it == nodes_.end()) {
    result.status = Status::NotFound("node " + update.node + " is not registered");
    return result;
  }
  NodeRecord& node = it->second;
  TouchSpec(node);
  if (update.op == "cordon" || update.op == "uncordon") {
    node.cordoned = update.op == "cordon";
  } else if (update.op == "pool") {
    node.pool = update.pool;
  } else if (update.op == "taint") {
    for (const auto& key : update.remove_taints) node.taints.erase(key);
    for (const auto& [key, value] : update.taints) node.taints[key] = value;
  } else {
    for (const auto& key : update.remove_labels) node.admin_labels.erase(key);
    for (const auto& [key, value] : update.labels) node.admin_labels[key] = value;
  }
  return result;
}

ApplyResult ClusterState::ApplyCancelJob(int64_t now, const CancelJobCmd& cmd) {
  ApplyResult result;
  result.job_id = cmd.job_id;
  JobRecord* job = MutableJob(cmd.job_id);
  if (job == nullptr) {
    result.status = Status::NotFound("job " + std::to_string(cmd.job_id) + " does not exist");
    return result;
  }
  // A retried cancel (its first reply lost) must not look like a failure.
  if (job->state == JobState::kCancelled || (job->cancel_requested && !IsTerminal(job->state))) {
    result.job_state = std::string(ToString(job->state));
    return result;
  }
  if (IsTerminal(job->state)) {
    result.status = Status::FailedPrecondition("job " + std::to_string(cmd.job_id) + " has already finished (" +
                                               std::string(ToString(job->state)) + ")");
    result.job_state = std::string(ToString(job->state));
    return result;
  }
  job->cancel_requested = true;
  for (auto& task : job->tasks) {
    if (task.state == TaskState::kPending) {
      task.set_message("cancelled before it was placed");
      FinishTask(*job, task, TaskState::kCancelled, now);
    } else if (HoldsResources(task.state)) {
      task.stop_requested = true;
      task.stop_grace_ms = cmd.grace_ms;
      task.set_message("cancel requested");
      TrackCommand(task);
    }
  }
  UpdateJobState(*job, now);
  result.job_state = std::string(ToString(job->state));
  return result;
}

Status ClusterState::CheckBind(const JobRecord& job, const PlanBind& bind,
                               const std::set<std::pair<std::string_view, uint32_t>>& taken,
                               std::map<std::string, std::pair<uint64_t, uint64_t>>& extra,
                               PlanLoads& loads) const {
  if (bind.task_index >= job.tasks.size()) return Status::InvalidArgument("task index out of range");
  const TaskRecord& task = job.tasks[bind.task_index];
  if (task.state != TaskState::kPending) return Status::FailedPrecondition("task is no longer pending");
  const Resources& need = job.spec.tasks[task.group].resources;
  const bool devices_match = need.cores > 0 ? bind.grant.cores.size() == need.cores && !bind.gpu_indices.empty()
                                            : bind.gpu_indices.size() == need.gpus;
  if (!devices_match || bind.cpu_milli != need.cpu_milli || bind.memory_mib != need.memory_mib) {
    return Status::InvalidArgument("bind does not match the task's request");
  }
  const NodeRecord* node = FindNode(bind.node);
  if (node == nullptr) return Status::NotFound("node " + bind.node + " is gone");
  if (node->state != NodeState::kReady || node->cordoned) return Status::FailedPrecondition("node not schedulable");
  for (uint32_t gpu : bind.gpu_indices) {
    auto spec_gpu = std::find_if(node->spec.gpus.begin(), node->spec.gpus.end(),
                                 [gpu](const GpuInfo& g) { return g.index == gpu; });
    if (spec_gpu == node->spec.gpus.end() || !spec_gpu->healthy) return Status::FailedPrecondition("GPU unusable");
    if (node->gpu_owner.count(gpu) || taken.count({bind.node, gpu})) {
      return Status::FailedPrecondition("GPU " + std::to_string(gpu) + " on " + bind.node + " is taken");
    }
    if (need.Whole() && (node->gpu_tenants.count(gpu) || spec_gpu->mig_mode == "static" || spec_gpu->mig_enabled)) {
      return Status::FailedPrecondition("GPU " + std::to_string(gpu) + " on " + bind.node + " is shared");
    }
  }
  GPOOL_RETURN_IF_ERROR(CheckGrant(need, bind, *node, loads));
  if (bind.numa_node >= 0) {
    auto numa = std::find_if(node->spec.numa.begin(), node->spec.numa.end(),
                             [&](const NumaInfo& n) { return n.id == bind.numa_node; });
    if (numa == node->spec.numa.end()) return Status::InvalidArgument("NUMA node not on the node");
    const auto [numa_cpu, numa_mem] = NumaUsed(*node, bind.numa_node);
    auto& [plan_cpu, plan_mem] = extra[bind.node + "#numa" + std::to_string(bind.numa_node)];
    if (numa_cpu + plan_cpu + bind.cpu_milli > numa->cpu_milli) return Status::FailedPrecondition("NUMA CPU");
    if (numa_mem + plan_mem + bind.memory_mib > numa->memory_mib) return Status::FailedPrecondition("NUMA memory");
    plan_cpu += bind.cpu_milli;
    plan_mem += bind.memory_mib;
  }
  auto& [cpu, mem] = extra[bind.node];
  if (node->cpu_milli_used + cpu + bind.cpu_milli > node->spec.cpu_milli) return Status::FailedPrecondition("CPU");
  if (node->memory_mib_used + mem + bind.memory_mib > node->spec.memory_mib) return Status::FailedPrecondition("memory");
  cpu += bind.cpu_milli;
  mem += bind.memory_mib;
  return Status::Ok();
}

ApplyResult ClusterState::ApplyPlan(int64_t now, const ApplyPlanCmd& cmd) {
  ApplyResult result;
  // Group binds by job: a job's binds apply whole or not at all, and only if
  // every task group then has at least its minimum bound or running.
  std::map<uint64_t, std::vector<const PlanBind*>> by_job;
  for (const auto& bind : cmd.binds) by_job[bind.job_id].push_back(&bind);

  // Each job is checked against the state as the plan's earlier jobs left
  // it: their binds are applied (GPU owners, tenants, CPU and memory) before
  // the next job is checked, so only what the job's own binds add up to needs
  // tracking on the side. That keeps a plan linear in its binds: a plan of
  // thousands of placements (a burst of wide jobs) applies in milliseconds.
  for (const auto& [job_id, binds] : by_job) {
    JobRecord* job = MutableJob(job_id);
    bool ok = job != nullptr && !IsTerminal(job->state) && !job->cancel_requested && job->failure().empty();
    if (ok) {
      std::set<uint32_t> indices;
      for (const auto* bind : binds) indices.insert(bind->task_index);
      ok = indices.size() == binds.size() && MeetsGangAfter(*job, indices);
    }
    std::set<std::pair<std::string_view, uint32_t>> job_taken;  // whole GPUs this job's binds take
    std::map<std::string, std::pair<uint64_t, uint64_t>> extra;  // CPU and memory they add, per node (and NUMA)
    PlanLoads job_loads;                                        // device loads they add
    for (size_t i = 0; ok && i < binds.size(); ++i) {
      ok = CheckBind(*job, *binds[i], job_taken, extra, job_loads).ok();
      if (binds[i]->grant.Empty()) {
        for (uint32_t gpu : binds[i]->gpu_indices) job_taken.insert({binds[i]->node, gpu});
      }
    }
    if (!ok) {
      ++result.jobs_rejected;
      continue;
    }
    for (const auto* bind : binds) {
      TaskRecord& task = job->tasks[bind->task_index];
      NodeRecord& node = nodes_[bind->node];
      task.state = TaskState::kBound;
      task.node = bind->node;
      task.gpu_indices = bind->gpu_indices;
      task.cpu_milli = bind->cpu_milli;
      task.memory_mib = bind->memory_mib;
      task.set_grant(bind->grant);
      task.numa_node = bind->numa_node;
      task.bind_ms = now;
      task.set_message("");
      // A node's first task sizes its sets for a full node, so they do not
      // grow (and leave freed buffers behind) one task at a time.
      if (node.tasks.empty()) node.tasks.reserve(std::max<size_t>(1, node.spec.gpus.size()));
      if (node.gpu_owner.empty() && task.grant().Empty()) node.gpu_owner.reserve(node.spec.gpus.size());
      HoldDevices(node, task);
      node.cpu_milli_used += bind->cpu_milli;
      node.memory_mib_used += bind->memory_mib;
      node.tasks.insert(task.id);
      Touch(node);
      ++active_count_;
      TrackCommand(task);
      ++result.binds_applied;
    }
    job->UpdateExtras([](JobRecord::Extras& e) {
      e.reasons.clear();
      e.claimed_nodes.clear();
    });
    UpdateJobState(*job, now);
  }
  for (const auto& eviction : cmd.evictions) ApplyEviction(now, eviction);
  for (const auto& entry : cmd.reasons) {
    JobRecord* job = MutableJob(entry.job_id);
    if (job != nullptr && job->state == JobState::kPending) {
      job->UpdateExtras([&](JobRecord::Extras& e) { e.reasons = entry.reasons; });
    }
  }
  return result;
}

bool ClusterState::MeetsGangAfter(const JobRecord& job, const std::set<uint32_t>& binding) const {
  std::vector<uint32_t> held(job.spec.tasks.size(), 0);
  for (const auto& task : job.tasks) {
    const bool holds = (HoldsResources(task.state) && !task.stop_requested) || task.state == TaskState::kSucceeded;
    if (holds || (binding.count(task.id.index) && task.state == TaskState::kPending)) ++held[task.group];
  }
  for (uint32_t group = 0; group < job.spec.tasks.size(); ++group) {
    if (held[group] < job.spec.tasks[group].MinReplicas()) return false;
  }
  return true;
}

void ClusterState::ApplyEviction(int64_t now, const PlanEviction& eviction) {
  JobRecord* job = MutableJob(eviction.job_id);
  if (job == nullptr || eviction.task_index >= job->tasks.size() || job->cancel_requested) return;
  TaskRecord& task = job->tasks[eviction.task_index];
  if (!HoldsResources(task.state) || task.stop_requested) return;
  JobRecord* claimant = MutableJob(eviction.for_job);
  // A plan can be older than the state it lands on: an eviction for a job
  // that no longer waits (cancelled, placed, gone) would stop work for nothing.
  if (claimant == nullptr || !pending_.count(eviction.for_job)) return;
  auto mark = [&](TaskRecord& victim) {
    claimant->UpdateExtras([&](JobRecord::Extras& e) {
      if (std::find(e.claimed_nodes.begin(), e.claimed_nodes.end(), victim.node) == e.claimed_nodes.end()) {
        e.claimed_nodes.push_back(victim.node);
      }
      e.claim_ms = now;
    });
    victim.stop_requested = true;
    victim.evicted = true;
    victim.stop_grace_ms = 0;
    victim.UpdateExtras([&](TaskRecord::Extras& e) {
      e.evicted_for = eviction.for_job;
      if (std::find(e.evicted_by.begin(), e.evicted_by.end(), eviction.for_job) == e.evicted_by.end()) {
        e.evicted_by.push_back(eviction.for_job);
      }
      e.message = eviction.reason.empty() ? "evicted" : eviction.reason.substr(0, 256);
    });
    TrackCommand(victim);
  };
  mark(task);
  // A gang never runs partly: if this leaves the task's group below its
  // minimum, the whole job goes back to pending.
  uint32_t staying = 0;
  for (const auto& other : job->tasks) {
    if (other.group == task.group && HoldsResources(other.state) && !other.stop_requested) ++staying;
  }
  if (staying < job->spec.tasks[task.group].MinReplicas()) {
    for (auto& other : job->tasks) {
      if (HoldsResources(other.state) && !other.stop_requested) mark(other);
    }
  }
}

bool ClusterState::RequeueIfEvicted(JobRecord& job, TaskRecord& task, int64_t now) {
  if (!task.evicted || job.cancel_requested || !job.failure().empty()) return false;
  if (HoldsResources(task.state)) ReleaseResources(task);
  if (JobRecord* claimant = MutableJob(task.evicted_for())) {
    claimant->UpdateExtras([&](JobRecord::Extras& e) { e.claim_ms = now; });
  }
  TaskRecord next;
  next.id = TaskId{task.id.job, task.id.index, task.id.attempt + 1};
  next.group = task.group;
  next.UpdateExtras([&](TaskRecord::Extras& e) {
    e.evicted_by = task.evicted_by();
    e.message = "requeued: " + task.message();
  });
  task = std::move(next);
  job.UpdateExtras([&](JobRecord::Extras& e) { e.requeue_ms = now; });
  return true;
}

ApplyResult ClusterState::ApplyTaskEvent(int64_t now, const TaskEventCmd& cmd) {
  ApplyResult result;
  const TaskEvent& event = cmd.event;
  JobRecord* job = MutableJob(event.task.job.value());
  if (job == nullptr || event.task.index >= job->tasks.size()) {
    result.status = Status::NotFound("task " + event.task.ToString() + " does not exist");
    return result;
  }
  TaskRecord& task = job->tasks[event.task.index];
  if (task.id != event.task || task.node != event.node) {
    result.status = Status::FailedPrecondition("event for task " + event.task.ToString() + " from node " + event.node +
                                               " does not match its current placement");
    return result;
  }
  // Events are redelivered until acked; a repeat must change nothing.
  if (!HoldsResources(task.state)) return result;
  const int64_t when = event.time_ms != 0 ? event.time_ms : now;
  if (event.kind == "started") {
    if (task.state == TaskState::kBound) {
      task.state = TaskState::kRunning;
      task.pid = event.pid;
      task.start_ms = when;
      TrackCommand(task);
    }
  } else if (event.kind == "exited" || event.kind == "failed") {
    task.exit_code = event.exit_code;
    task.signal = event.signal;
    if (!event.message.empty()) task.set_message(event.message);
    TaskState final_state = TaskState::kFailed;
    if (task.stop_requested) {
      final_state = TaskState::kCancelled;
    } else if (event.kind == "exited" && event.exit_code == 0 && event.signal == 0) {
      final_state = TaskState::kSucceeded;
    }
    if (task.start_ms == 0) task.start_ms = when;
    if (!RequeueIfEvicted(*job, task, when)) FinishTask(*job, task, final_state, when);
  } else {
    result.status = Status::InvalidArgument("unknown task event kind '" + event.kind.substr(0, 32) + "'");
    return result;
  }
  UpdateJobState(*job, now);
  return result;
}

void ClusterState::ReleaseResources(TaskRecord& task) {
  auto it = nodes_.find(task.node);
  if (it != nodes_.end()) {
    NodeRecord& node = it->second;
    ReleaseDevices(node, task);
    node.cpu_milli_used -= std::min(node.cpu_milli_used, task.cpu_milli);
    node.memory_mib_used -= std::min(node.memory_mib_used, task.memory_mib);
    if (node.tasks.erase(task.id) != 0) --active_count_;
    Touch(node);
  }
  UntrackCommand(task);
}

void ClusterState::FinishTask(JobRecord& job, TaskRecord& task, TaskState state, int64_t now) {
  if (HoldsResources(task.state)) ReleaseResources(task);
  task.state = state;
  task.finish_ms = now;
  if ((state == TaskState::kFailed || state == TaskState::kLost) && job.failure().empty()) {
    std::string failure = "task " + std::to_string(task.id.index) + (state == TaskState::kLost ? " was lost" : " failed");
    if (state == TaskState::kFailed) {
      failure += task.signal != 0 ? " (killed by signal " + std::to_string(task.signal) + ")"
                                  : " (exit code " + std::to_string(task.exit_code) + ")";
    }
    if (!task.message().empty()) failure += ": " + task.message();
    job.UpdateExtras([&](JobRecord::Extras& e) { e.failure = std::move(failure); });
  }
}

void ClusterState::UpdateJobState(JobRecord& job, int64_t now) {
  // One failed task fails a gang job: stop the rest.
  if (!job.failure().empty()) {
    for (auto& task : job.tasks) {
      if (task.state == TaskState::kPending) {
        task.set_message("job failed before this task was placed");
        FinishTask(job, task, TaskState::kCancelled, now);
      } else if (HoldsResources(task.state) && !task.stop_requested) {
        task.stop_requested = true;
        task.set_message("stopping: another task of the job failed");
        TrackCommand(task);
      }
    }
  }
  FinishUnneededReplicas(job, now);
  bool all_terminal = true, any_active = false, any_started = false, any_pending = false;
  bool any_cancelled_by_user = false;
  for (const auto& task : job.tasks) {
    any_pending |= task.state == TaskState::kPending;
    all_terminal &= IsTerminal(task.state);
    any_active |= HoldsResources(task.state);
    any_cancelled_by_user |= task.state == TaskState::kCancelled && task.message().rfind("not needed", 0) != 0;
    any_started |= task.start_ms != 0;
  }
  JobState next = JobState::kPending;
  if (all_terminal) {
    next = !job.failure().empty() ? JobState::kFailed
           : (any_cancelled_by_user || job.cancel_requested) ? JobState::kCancelled
                                                             : JobState::kSucceeded;
  } else if (any_active) {
    next = JobState::kRunning;
  }
  if (any_started && job.start_ms == 0) {
    int64_t first = 0;
    for (const auto& task : job.tasks) {
      if (task.start_ms != 0 && (first == 0 || task.start_ms < first)) first = task.start_ms;
    }
    job.start_ms = first;
  }
  if (IsTerminal(next) && job.finish_ms == 0) job.finish_ms = now;
  if (next != JobState::kPending && !job.reasons().empty()) {
    job.UpdateExtras([](JobRecord::Extras& e) { e.reasons.clear(); });
  }
  SetJobState(job, next);
  // Schedulable: has tasks to place. A running elastic job (or one that lost
  // replicas to eviction) stays schedulable while it runs.
  if (!IsTerminal(next) && !job.cancel_requested && any_pending) {
    pending_.insert(job.id.value());
  } else {
    pending_.erase(job.id.value());
  }
}

void ClusterState::FinishUnneededReplicas(JobRecord& job, int64_t now) {
  // An elastic job whose replicas all finished well is done: replicas beyond
  // the minimum that never got capacity are not needed any more.
  std::vector<uint32_t> succeeded(job.spec.tasks.size(), 0);
  bool any_pending = false;
  for (const auto& task : job.tasks) {
    if (HoldsResources(task.state) || !job.failure().empty() || job.cancel_requested) return;
    if (task.state == TaskState::kSucceeded) ++succeeded[task.group];
    any_pending |= task.state == TaskState::kPending;
  }
  if (!any_pending) return;
  for (uint32_t group = 0; group < job.spec.tasks.size(); ++group) {
    if (succeeded[group] < job.spec.tasks[group].MinReplicas()) return;
  }
  for (auto& task : job.tasks) {
    if (task.state != TaskState::kPending) continue;
    task.set_message("not needed: the job's other replicas finished");
    FinishTask(job, task, TaskState::kCancelled, now);
  }
}

namespace {

struct SnapshotImage {
  uint64_t applied_index = 0;
  uint64_t next_job_id = 1;
  std::vector<NodeRecord> nodes;
  std::vector<JobRecord> jobs;
  std::vector<QueueRecord> queues;
  template <typename V>
  void Fields(V& v) {
    v.Required("applied", applied_index);
    v.Required("next_job_id", next_job_id);
    v.Required("nodes", nodes);
    v.Required("jobs", jobs);
    v.Optional("queues", queues);
  }
};

}  // namespace

// Writes exactly what packing a SnapshotImage would, record by record: first
// gathering every record into an image held a second copy of the whole state
// while the snapshot was taken (at 100,000 tasks, hundreds of MB at the peak).
std::string ClusterState::Snapshot() const {
  msgpack::sbuffer buffer;
  wire::Packer packer(buffer);
  wire::FieldCounter fields;
  SnapshotImage().Fields(fields);
  packer.BeginMap(fields.count);
  packer.Field("applied", applied_index_);
  packer.Field("next_job_id", next_job_id_);
  packer.Key("nodes");
  packer.BeginArray(static_cast<uint32_t>(nodes_.size()));
  for (const auto& [name, node] : nodes_) {
    // NodeRecord::Fields rebuilds its indexes from the lists it packs, so it
    // packs a copy, one node at a time; job and queue Fields only reassign
    // equal values and pack in place.
    NodeRecord copy = node;
    packer.Value(copy);
  }
  packer.Key("jobs");
  packer.BeginArray(static_cast<uint32_t>(jobs_.size()));
  for (const auto& [id, job] : jobs_) packer.Value(job);
  packer.Key("queues");
  packer.BeginArray(static_cast<uint32_t>(queues_.size()));
  for (const auto& [name, queue] : queues_) packer.Value(queue);
  return std::string(buffer.data(), buffer.size());
}

Status ClusterState::Restore(std::string_view snapshot) {
  wire::DecodeLimits limits;
  limits.max_frame_bytes = size_t{4} << 30;
  limits.max_container_elements = size_t{1} << 26;
  limits.max_string_bytes = size_t{1} << 30;
  auto image = wire::UnpackFromString<SnapshotImage>(snapshot, limits);
  if (!image.ok()) return image.status().WithContext("restoring snapshot");
  applied_index_ = image->applied_index;
  next_job_id_ = image->next_job_id;
  generation_ = NextGeneration();  // every cached view is stale
  nodes_.clear();
  jobs_.clear();
  for (auto& node : image->nodes) nodes_[node.spec.name] = std::move(node);
  for (auto& job : image->jobs) jobs_[job.id.value()] = std::move(job);
  queues_.clear();
  for (auto& queue : image->queues) queues_[queue.spec.name] = std::move(queue);
  EnsureBuiltinQueues();
  RebuildIndexes();
  return Status::Ok();
}

void ClusterState::RebuildIndexes() {
  idempotency_.clear();
  pending_.clear();
  due_log_ = {};
  due_count_ = 0;
  job_states_ = {};
  active_count_ = 0;
  for (const auto& [name, node] : nodes_) active_count_ += node.tasks.size();
  for (auto& [id, job] : jobs_) {
    if (!job.idempotency_key.empty()) idempotency_.emplace(KeyHash(job.idempotency_key), id);
    ++job_states_[static_cast<size_t>(job.state)];
    bool any_pending = false;
    for (auto& task : job.tasks) {
      task.command_seq = 0;
      if (HoldsResources(task.state)) TrackCommand(task);
      any_pending |= task.state == TaskState::kPending;
    }
    if (!IsTerminal(job.state) && !job.cancel_requested && any_pending) pending_.insert(id);
  }
}

uint64_t ClusterState::NextGeneration() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

std::vector<TaskId> ClusterState::ActiveTasks() const {
  std::vector<TaskId> ids;
  ids.reserve(active_count_);
  for (const auto& [name, node] : nodes_) ids.insert(ids.end(), node.tasks.begin(), node.tasks.end());
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::optional<ClusterState::CommandDue> ClusterState::command_due(const TaskId& id) const {
  const TaskRecord* task = FindTask(id);
  if (task == nullptr || task->command_seq == 0) return std::nullopt;
  return CommandDue{task->command_seq, task->command_stop};
}

void ClusterState::TrackCommand(TaskRecord& task) {
  const bool due = HoldsResources(task.state) && (task.stop_requested || task.state == TaskState::kBound);
  if (!due) return UntrackCommand(task);
  if (task.command_seq != 0 && task.command_stop == task.stop_requested) return;  // the same command is still due
  if (task.command_seq == 0) ++due_count_;
  task.command_seq = ++due_seq_;
  task.command_stop = task.stop_requested;
  due_log_.emplace_back(task.command_seq, task.id);
}

void ClusterState::UntrackCommand(TaskRecord& task) {
  if (task.command_seq == 0) return;
  task.command_seq = 0;
  --due_count_;
  if (due_count_ == 0) {
    due_log_ = {};  // every task runs: hold nothing
  } else if (due_log_.size() > 2 * due_count_ + 1024) {
    // Mostly stale: keep the live entries (amortized, each entry is copied
    // at most once per halving).
    std::erase_if(due_log_, [&](const std::pair<uint64_t, TaskId>& entry) {
      const TaskRecord* t = FindTask(entry.second);
      return t == nullptr || t->command_seq != entry.first;
    });
  }
}

void ClusterState::SetJobState(JobRecord& job, JobState state) {
  if (job.state == state) return;
  --job_states_[static_cast<size_t>(job.state)];
  ++job_states_[static_cast<size_t>(state)];
  job.state = state;
}

}  // namespace gpool::state
