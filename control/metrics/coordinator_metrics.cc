#include "control/metrics/coordinator_metrics.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <tuple>

#include "control/session_view.h"

namespace gpool::control {

namespace {

using metrics::Exposition;
using metrics::Type;

void Scheduling(Exposition& out, const CoordinatorMetricsInput& in) {
  const SchedulingMetrics& s = in.recorded->scheduling;
  out.Family("gpool_scheduler_cycle_duration_seconds", Type::kHistogram,
             "How long the pure scheduler took per cycle (leader).");
  out.Observe({}, s.cycle_seconds);
  out.Family("gpool_scheduler_decisions_per_cycle", Type::kHistogram,
             "Tasks bound by one scheduling cycle (leader).");
  out.Observe({}, s.decisions_per_cycle);
  out.Family("gpool_scheduler_view_refresh_seconds", Type::kHistogram,
             "How long refreshing the scheduler's view of the state took the coordinator's loop, per cycle "
             "(leader); the next cycle waits at least 4 times as long.");
  out.Observe({}, s.view_refresh_seconds);
  out.Single("gpool_scheduler_cycles_total", Type::kCounter, "Scheduling cycles run (leader).",
             static_cast<double>(s.cycles));
  out.Single("gpool_scheduler_binds_total", Type::kCounter, "Task placements proposed (leader).",
             static_cast<double>(s.binds));
  out.Family("gpool_scheduler_evictions_total", Type::kCounter,
             "Tasks the scheduler evicted, by cause: preempt (a higher class), reclaim (a queue's share) (leader).");
  for (const char* cause : {"preempt", "reclaim", "other"}) {
    auto it = s.evictions_by_cause.find(cause);
    out.Sample({{"cause", cause}}, it == s.evictions_by_cause.end() ? 0.0 : static_cast<double>(it->second));
  }
  out.Family("gpool_job_submit_to_running_seconds", Type::kHistogram,
             "Time from a job's submission to its first start (leader).");
  out.Observe({}, in.recorded->submit_to_running_seconds);
}

void Jobs(Exposition& out, const CoordinatorMetricsInput& in) {
  const state::ClusterState& state = *in.state;
  out.Family("gpool_jobs", Type::kGauge, "Jobs in the state, by state.");
  for (JobState s : {JobState::kPending, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                     JobState::kCancelled}) {
    out.Sample({{"state", ToString(s)}}, state.jobs_in_state(s));
  }
  // A pending job counts once, under its first reason (the one `gpool
  // explain` leads with). Only jobs in the pending index (with a task to
  // place) are looked at: the state's indexes keep a scrape from walking
  // every job. Pending jobs without a reason (not yet considered by a cycle)
  // count under "none", so the family sums to gpool_jobs{state="Pending"}.
  std::map<std::string_view, uint64_t> by_reason;
  uint64_t with_reason = 0;
  for (uint64_t id : state.pending_jobs()) {
    const state::JobRecord* job = state.FindJob(JobId(id));
    if (job == nullptr || job->state != JobState::kPending || job->reasons().empty()) continue;
    ++by_reason[topology::PendingCodeSlug(job->reasons()[0].code)];
    ++with_reason;
  }
  const uint64_t pending = state.jobs_in_state(JobState::kPending);
  if (pending > with_reason || by_reason.empty()) by_reason["none"] += pending - std::min(pending, with_reason);
  const std::map<std::string_view, std::array<uint32_t, 2>> per_queue(state.queue_jobs().begin(),
                                                                      state.queue_jobs().end());
  std::map<std::string, uint64_t> sessions;
  for (uint64_t id : state.session_jobs()) {
    if (const state::JobRecord* job = state.FindJob(JobId(id)); job != nullptr) ++sessions[ToSessionInfo(*job).state];
  }
  out.Family("gpool_jobs_pending", Type::kGauge, "Pending jobs by the code of their first pending reason.");
  for (const auto& [reason, n] : by_reason) out.Sample({{"reason", reason}}, static_cast<double>(n));
  out.Single("gpool_tasks_active", Type::kGauge, "Tasks bound or running.",
             static_cast<double>(state.active_task_count()));
  out.Family("gpool_queue_jobs", Type::kGauge, "Jobs pending and running per leaf queue.");
  for (const auto& [queue, n] : per_queue) {
    out.Sample({{"queue", queue}, {"state", "pending"}}, static_cast<double>(n[0]));
    out.Sample({{"queue", queue}, {"state", "running"}}, static_cast<double>(n[1]));
  }
  out.Family("gpool_sessions", Type::kGauge, "Remote GPU sessions by state (docs/operations.md 4.4).");
  for (const auto& [name, n] : sessions) out.Sample({{"state", name}}, static_cast<double>(n));
}

void QuotaFamily(Exposition& out, const char* name, const char* help,
                 const std::map<std::string, Quota>& by_queue) {
  out.Family(name, Type::kGauge, help);
  for (const auto& [queue, quota] : by_queue) {
    for (const auto& [resource, value] : quota) {
      out.Sample({{"queue", queue}, {"resource", resource}}, static_cast<double>(value));
    }
  }
}

void Queues(Exposition& out, const CoordinatorMetricsInput& in) {
  const state::ClusterState& state = *in.state;
  const std::map<std::string, Quota> allocated = state.QueueAllocations();
  std::map<std::string, Quota> deserved, guarantee, capability;
  for (const auto& [name, queue] : state.queues()) {
    deserved[name] = queue.spec.deserved;
    guarantee[name] = queue.spec.guarantee;
    capability[name] = queue.spec.capability;
  }
  QuotaFamily(out, "gpool_queue_allocated", "Held by the queue's bound and running tasks (and its descendants'), by resource.",
              allocated);
  QuotaFamily(out, "gpool_queue_deserved", "The queue's deserved (fair) share, by resource.", deserved);
  QuotaFamily(out, "gpool_queue_guarantee", "The queue's guaranteed share, by resource.", guarantee);
  QuotaFamily(out, "gpool_queue_capability", "The queue's hard limit, by resource.", capability);
  out.Family("gpool_queue_fair_share_ratio", Type::kGauge,
             "Allocated over deserved per queue and resource (above 1: borrowing).");
  for (const auto& [queue, quota] : deserved) {
    auto held = allocated.find(queue);
    for (const auto& [resource, want] : quota) {
      if (want == 0) continue;
      uint64_t have = 0;
      if (held != allocated.end()) {
        auto it = held->second.find(resource);
        if (it != held->second.end()) have = it->second;
      }
      out.Sample({{"queue", queue}, {"resource", resource}}, static_cast<double>(have) / static_cast<double>(want));
    }
  }
}

// What the GPU's tenants (shares, MIG instances, core grants) hold.
struct Tenancy {
  size_t count = 0;
  double memory_bytes = 0;
  double compute_ratio = 0;
};

Tenancy TenancyOf(const state::ClusterState& state, const state::NodeRecord& node, uint32_t index) {
  Tenancy tenancy;
  auto tenants = node.gpu_tenants.find(index);
  if (tenants == node.gpu_tenants.end()) return tenancy;
  for (const TaskId& id : tenants->second) {
    const state::TaskRecord* task = state.FindTask(id);
    if (task == nullptr) continue;
    const DeviceGrant grant = task->grant();
    ++tenancy.count;
    tenancy.memory_bytes += static_cast<double>(grant.gpu_memory_mib) * 1024 * 1024;
    tenancy.compute_ratio += grant.gpu_compute_pct / 100.0;
  }
  return tenancy;
}

// Per-GPU families walk the nodes directly (no NodeSummary per node): at
// 100,000 GPUs that is what keeps a scrape within its budget. Share and
// health series are sparse (only GPUs with tenants, only unhealthy GPUs):
// a missing series is no shares, healthy.
void PerGpu(Exposition& out, const state::ClusterState& state) {
  char index[12];
  auto label_of = [&index](uint32_t i) {
    auto end = std::to_chars(index, index + sizeof(index), i).ptr;
    return std::string_view(index, static_cast<size_t>(end - index));
  };
  out.Family("gpool_gpu_allocated", Type::kGauge, "1 when a task holds the GPU whole, 0 otherwise.");
  for (const auto& [name, node] : state.nodes()) {
    for (const auto& gpu : node.spec.gpus) {
      out.Sample({{"node", name}, {"gpu", label_of(gpu.index)}, {"model", gpu.model}},
                 node.gpu_owner.find(gpu.index) != node.gpu_owner.end() ? 1.0 : 0.0);
    }
  }
  out.Family("gpool_gpu_unhealthy", Type::kGauge, "1 for a GPU that takes no work (its worker or the health policy); healthy GPUs have no series.");
  for (const auto& [name, node] : state.nodes()) {
    for (const auto& gpu : node.spec.gpus) {
      if (!node.GpuUsable(gpu)) out.Sample({{"node", name}, {"gpu", label_of(gpu.index)}, {"model", gpu.model}}, 1);
    }
  }
  struct Share {
    const std::string* node;
    const GpuInfo* gpu;
    Tenancy tenancy;
  };
  std::vector<Share> shared;
  for (const auto& [name, node] : state.nodes()) {
    for (const auto& gpu : node.spec.gpus) {
      if (node.gpu_tenants.count(gpu.index) != 0) shared.push_back(Share{&name, &gpu, TenancyOf(state, node, gpu.index)});
    }
  }
  auto family = [&](const char* metric, const char* help, auto value) {
    out.Family(metric, Type::kGauge, help);
    for (const Share& s : shared) {
      out.Sample({{"node", *s.node}, {"gpu", label_of(s.gpu->index)}, {"model", s.gpu->model}}, value(s.tenancy));
    }
  };
  family("gpool_gpu_shares", "Shares, MIG instances or core grants held on the GPU (GPUs with none have no series).",
         [](const Tenancy& t) { return static_cast<double>(t.count); });
  family("gpool_gpu_share_memory_allocated_bytes", "GPU memory granted to the GPU's shares.",
         [](const Tenancy& t) { return t.memory_bytes; });
  family("gpool_gpu_share_compute_allocated_ratio", "Compute granted to the GPU's shares (1 = the whole GPU).",
         [](const Tenancy& t) { return t.compute_ratio; });
}

void Devices(Exposition& out, const CoordinatorMetricsInput& in) {
  const state::ClusterState& state = *in.state;
  std::map<std::string_view, uint64_t> nodes_by_state;
  // model -> {total, whole, shared, unhealthy}
  std::map<std::string_view, std::array<uint64_t, 4>> by_model;
  std::map<std::pair<std::string_view, std::string_view>, uint64_t> conditions;  // kind, severity
  for (const auto& [name, node] : state.nodes()) {
    ++nodes_by_state[ToString(node.state)];
    for (const auto* list : {&node.health, &node.probe_health}) {
      for (const auto& condition : *list) ++conditions[{condition.kind, condition.severity}];
    }
    // A node's GPUs are nearly always of one model: the map is searched
    // when the model changes, not for each of 100,000 GPUs.
    std::array<uint64_t, 4>* counts = nullptr;
    const std::string* model = nullptr;
    for (const auto& gpu : node.spec.gpus) {
      if (model == nullptr || gpu.model != *model) {
        model = &gpu.model;
        counts = &by_model[gpu.model];
      }
      auto& m = *counts;
      ++m[0];
      if (node.gpu_owner.find(gpu.index) != node.gpu_owner.end()) ++m[1];
      if (node.gpu_tenants.count(gpu.index) != 0) ++m[2];
      if (!node.GpuUsable(gpu)) ++m[3];
    }
  }
  out.Family("gpool_nodes", Type::kGauge, "Nodes by state.");
  for (const auto& [s, n] : nodes_by_state) out.Sample({{"state", s}}, static_cast<double>(n));
  out.Family("gpool_gpus", Type::kGauge,
             "GPUs per model: total, held whole, shared (one or more shares or MIG instances held), unhealthy.");
  for (const auto& [model, m] : by_model) {
    out.Sample({{"model", model}, {"kind", "total"}}, static_cast<double>(m[0]));
    out.Sample({{"model", model}, {"kind", "whole"}}, static_cast<double>(m[1]));
    out.Sample({{"model", model}, {"kind", "shared"}}, static_cast<double>(m[2]));
    out.Sample({{"model", model}, {"kind", "unhealthy"}}, static_cast<double>(m[3]));
  }
  out.Family("gpool_node_health_conditions", Type::kGauge, "Health conditions nodes report, by kind and severity.");
  for (const auto& [key, n] : conditions) {
    out.Sample({{"kind", key.first}, {"severity", key.second}}, static_cast<double>(n));
  }
  if (in.per_gpu) PerGpu(out, state);
}

void Replication(Exposition& out, const CoordinatorMetricsInput& in) {
  const log::ReplicationReport& r = in.replication;
  const ReplicationMetrics& m = in.recorded->replication;
  out.Family("gpool_coordinator_info", Type::kGauge, "This replica: its id, version and Raft role.");
  out.Sample({{"replica", in.replica_id}, {"version", in.version}, {"role", r.role.empty() ? "leader" : r.role}}, 1);
  out.Single("gpool_coordinator_leader", Type::kGauge, "1 on the serving leader.", in.leading ? 1 : 0);
  out.Single("gpool_raft_term", Type::kGauge, "This replica's Raft term.", static_cast<double>(r.term));
  out.Single("gpool_raft_commit_index", Type::kGauge, "Highest log index known committed.",
             static_cast<double>(r.commit_index));
  out.Single("gpool_raft_applied_index", Type::kGauge, "Highest log index applied to the state.",
             static_cast<double>(in.state->applied_index()));
  out.Family("gpool_raft_commit_duration_seconds", Type::kHistogram,
             "From proposing a command to its commit and apply, for this replica's own proposals.");
  out.Observe({}, m.commit_seconds);
  out.Single("gpool_raft_commits_total", Type::kCounter, "This replica's own proposals committed.",
             static_cast<double>(m.commits));
  out.Single("gpool_raft_leader_changes_total", Type::kCounter,
             "Times this replica saw leadership change (a new term, or it started or stopped serving).",
             static_cast<double>(m.leader_changes));
  out.Family("gpool_raft_follower_lag_entries", Type::kGauge,
             "Entries a replica's log is behind the commit index (as this replica knows it; the leader's view is exact).");
  for (const auto& replica : r.replicas) {
    const double lag = replica.match >= r.commit_index ? 0.0 : static_cast<double>(r.commit_index - replica.match);
    out.Sample({{"replica", std::to_string(replica.id)}}, lag);
  }
  out.Single("gpool_raft_snapshots_total", Type::kCounter, "Snapshots this replica wrote.",
             static_cast<double>(m.snapshots));
  out.Single("gpool_raft_snapshot_bytes", Type::kGauge, "Size of the last snapshot this replica wrote.",
             static_cast<double>(m.last_snapshot_bytes));
}

// Issue 49: the loop thread's time away from its poll, every replica.
void LoopStallFamilies(Exposition& out, const CoordinatorMetricsInput& in) {
  const LoopStallMeter& loop = in.recorded->loop;
  out.Family("gpool_loop_iteration_seconds", Type::kHistogram,
             "Work of one turn of the coordinator's loop, from its poll returning to the next poll: while it runs, "
             "no frame (client, worker or peer) is answered.");
  out.Observe({}, loop.iterations());
  out.Single("gpool_loop_iteration_max_seconds", Type::kGauge,
             "The longest loop turn in the last 10 to 20 seconds.", loop.window_max_seconds());
}

void Workers(Exposition& out, const CoordinatorMetricsInput& in) {
  const WorkerMetrics& w = in.recorded->workers;
  out.Single("gpool_workers_connected", Type::kGauge, "Workers registered on a live connection (leader).",
             static_cast<double>(in.workers->size()));
  out.Single("gpool_worker_heartbeats_total", Type::kCounter, "Heartbeats received (leader).",
             static_cast<double>(w.heartbeats));
  out.Single("gpool_worker_registrations_total", Type::kCounter, "Worker registrations committed (leader).",
             static_cast<double>(w.registrations));
  out.Single("gpool_task_events_total", Type::kCounter, "Task events from workers committed (leader).",
             static_cast<double>(w.task_events));
  out.Single("gpool_task_event_resends_dropped_total", Type::kCounter,
             "Task events resent by a worker while their first copy was still being committed: not proposed "
             "again (leader).",
             static_cast<double>(w.task_events_in_flight_dropped));
  out.Single("gpool_worker_registration_retries_coalesced_total", Type::kCounter,
             "Registrations a worker sent again on the same connection while its first was still being "
             "committed: answered by that one, not proposed again (leader).",
             static_cast<double>(w.registrations_in_flight_dropped));
  out.Single("gpool_tasks_lost_total", Type::kCounter, "Tasks ended as lost (their node went silent) (leader).",
             static_cast<double>(w.tasks_lost));
  out.Single("gpool_worker_commands_waiting", Type::kGauge,
             "Binds and preempts due but held back because their node already has its window of unacknowledged "
             "commands (leader).",
             static_cast<double>(w.commands_waiting));
  out.Single("gpool_worker_commands_resent_total", Type::kCounter,
             "Binds and preempts sent again: unacknowledged past their timeout, or acknowledged and still not in "
             "effect (leader).",
             static_cast<double>(w.commands_resent));
  out.Family("gpool_worker_command_ack_seconds", Type::kHistogram,
             "From sending a bind or preempt to a worker to its acknowledgement (leader).");
  out.Observe({}, w.command_ack_seconds);
}

// A sink whose receiver refuses it (a certificate that does not verify, a
// 5xx) shows here as failures and events given up, not only in the log.
void Webhooks(Exposition& out, const CoordinatorMetricsInput& in) {
  out.Family("gpool_webhook_requests_total", Type::kCounter,
             "Webhook requests sent, by sink and result: ok (2xx) or failed (no answer, TLS refused, not 2xx) (leader).");
  for (const auto& [sink, stats] : in.webhooks) {
    out.Sample({{"sink", sink}, {"result", "ok"}}, static_cast<double>(stats.attempts - stats.failures));
    out.Sample({{"sink", sink}, {"result", "failed"}}, static_cast<double>(stats.failures));
  }
  out.Family("gpool_webhook_events_total", Type::kCounter,
             "Events a webhook sink is done with, by sink and outcome: delivered, given_up (after max_attempts or "
             "a 4xx), skipped (its filter) (leader).");
  for (const auto& [sink, stats] : in.webhooks) {
    out.Sample({{"sink", sink}, {"outcome", "delivered"}}, static_cast<double>(stats.delivered));
    out.Sample({{"sink", sink}, {"outcome", "given_up"}}, static_cast<double>(stats.given_up));
    out.Sample({{"sink", sink}, {"outcome", "skipped"}}, static_cast<double>(stats.skipped));
  }
  out.Family("gpool_webhook_queued_events", Type::kGauge, "Events waiting in a webhook sink's queue (leader).");
  for (const auto& [sink, stats] : in.webhooks) out.Sample({{"sink", sink}}, static_cast<double>(stats.queued));
}

void KeyLimits(Exposition& out, const CoordinatorMetricsInput& in) {
  const auto& k = in.key_limits;
  out.Single("gpool_client_connections_counted", Type::kGauge,
             "Client connections counted against their key's --max-connections-per-key (admins' are not).",
             static_cast<double>(k.connections));
  out.Single("gpool_client_requests_in_flight", Type::kGauge,
             "Client requests waiting for an answer, counted against --max-inflight-per-key (admins' are not).",
             static_cast<double>(k.inflight_requests));
  out.Single("gpool_exec_streams_open", Type::kGauge,
             "gpool exec commands open, counted against --max-exec-streams-per-user (admins' are not) (leader).",
             static_cast<double>(k.exec_streams));
}

}  // namespace

std::string RenderCoordinatorMetrics(const CoordinatorMetricsInput& input) {
  Exposition out;
  Replication(out, input);
  LoopStallFamilies(out, input);
  Scheduling(out, input);
  Jobs(out, input);
  Queues(out, input);
  Devices(out, input);
  Workers(out, input);
  Webhooks(out, input);
  KeyLimits(out, input);
  return out.Take();
}

}  // namespace gpool::control
