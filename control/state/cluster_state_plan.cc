// ClusterState: ApplyPlan, the scheduler's placements and evictions: each
// job's binds are re-checked against the current state (and the plan's
// earlier binds) and applied whole or not at all; evictions keep gangs whole.
#include "control/state/cluster_state.h"
#include "protocol/event.h"

#include <algorithm>

namespace gpool::state {

Status ClusterState::CheckBind(const JobRecord& job, const PlanBind& bind,
                               const std::set<std::pair<std::string_view, uint32_t>>& taken,
                               std::map<std::string, std::pair<uint64_t, uint64_t>>& extra,
                               PlanLoads& loads, PlanCpus& cpus) const {
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
    if (spec_gpu == node->spec.gpus.end() || !node->GpuUsable(*spec_gpu)) return Status::FailedPrecondition("GPU unusable");
    if (node->gpu_owner.count(gpu) || taken.count({bind.node, gpu})) {
      return Status::FailedPrecondition("GPU " + std::to_string(gpu) + " on " + bind.node + " is taken");
    }
    if (need.Whole() && !bind.grant.time_slice &&
        (node->gpu_tenants.count(gpu) || spec_gpu->mig_mode == "static" || spec_gpu->mig_enabled)) {
      return Status::FailedPrecondition("GPU " + std::to_string(gpu) + " on " + bind.node + " is shared");
    }
  }
  if (bind.grant.time_slice && job.spec.priority_class != "low") {
    return Status::InvalidArgument("time-sliced replicas are for low-class work only");
  }
  GPOOL_RETURN_IF_ERROR(CheckGrant(need, bind, *node, loads));
  GPOOL_RETURN_IF_ERROR(CheckExclusiveCpus(need, bind, *node, cpus));
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
  for (const auto& bind : cmd.binds) by_job[bind.job.value()].push_back(&bind);

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
    PlanCpus job_cpus;                                          // exclusive CPU ids they take
    for (size_t i = 0; ok && i < binds.size(); ++i) {
      ok = CheckBind(*job, *binds[i], job_taken, extra, job_loads, job_cpus).ok();
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
      task.set_cpu_ids(bind->cpu_ids);
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
      CountQueueHeld(*job, node, task, +1);
      Touch(node);
      ++active_count_;
      TrackCommand(task);
      ++result.binds_applied;
    }
    job->UpdateExtras([](JobRecord::Extras& e) {
      e.pending.clear();
      e.legacy_reasons.clear();
      e.claimed_nodes.clear();
    });
    UpdateJobState(*job, now);
  }
  for (const auto& eviction : cmd.evictions) ApplyEviction(now, eviction);
  for (const auto& entry : cmd.pending) {
    JobRecord* job = MutableJob(entry.job.value());
    if (job != nullptr && job->state == JobState::kPending) {
      job->UpdateExtras([&](JobRecord::Extras& e) {
        e.pending = entry.reasons;
        e.legacy_reasons = entry.legacy_reasons;
      });
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
  JobRecord* job = MutableJob(eviction.job.value());
  if (job == nullptr || eviction.task_index >= job->tasks.size() || job->cancel_requested) return;
  TaskRecord& task = job->tasks[eviction.task_index];
  if (!HoldsResources(task.state) || task.stop_requested) return;
  JobRecord* claimant = MutableJob(eviction.for_job.value());
  // A plan can be older than the state it lands on: an eviction for a job
  // that no longer waits (cancelled, placed, gone) would stop work for nothing.
  if (claimant == nullptr || !pending_.count(eviction.for_job.value())) return;
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
      e.evicted_for = eviction.for_job.value();
      if (std::find(e.evicted_by.begin(), e.evicted_by.end(), eviction.for_job.value()) == e.evicted_by.end()) {
        e.evicted_by.push_back(eviction.for_job.value());
      }
      e.message = eviction.reason.empty() ? "evicted" : eviction.reason.substr(0, 256);
    });
    TrackCommand(victim);
    const bool reclaim = eviction.reason.rfind("reclaim", 0) == 0;
    EmitTask(now, reclaim ? EventKind::kTaskReclaimed : EventKind::kTaskPreempted, victim, victim.message());
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

}  // namespace gpool::state
