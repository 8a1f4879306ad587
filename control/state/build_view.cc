// ClusterState::BuildView: the scheduler's picture of the state.
#include <algorithm>

#include "control/state/cluster_state.h"
#include "control/state/cluster_state_internal.h"

namespace gpool::state {
namespace {

// A claim outlives its victims by this long: enough for the claimant to be
// placed in the next cycles, short enough that a claimant that can no longer
// fit (its node failed) does not hold nodes idle for long.
constexpr int64_t kClaimLapseMs = 60'000;


}  // namespace

topology::NodeView ClusterState::ToNodeView(const std::string& name, const NodeRecord& node) const {
  topology::NodeView view;
  view.name = name;
  view.ready = node.state == NodeState::kReady;
  view.cordoned = node.cordoned;
  view.cpu_milli_total = node.spec.cpu_milli;
  view.cpu_milli_free = node.spec.cpu_milli - std::min(node.spec.cpu_milli, node.cpu_milli_used);
  view.memory_mib_total = node.spec.memory_mib;
  view.memory_mib_free = node.spec.memory_mib - std::min(node.spec.memory_mib, node.memory_mib_used);
  view.labels = node.spec.labels;
  for (const auto& [key, value] : node.admin_labels) view.labels[key] = value;
  // Every node answers to its name, so a job can be pinned to one
  // (`--selector gpool.io/node=NAME`; gpool probe runs one task per node so).
  view.labels["gpool.io/node"] = name;
  view.taints = node.taints;
  view.pool = node.pool;
  view.pool_queue = node.pool_queue;
  for (const auto& gpu : node.spec.gpus) view.gpus.push_back(GpuSlotOf(node, gpu));
  for (const auto& numa : node.spec.numa) {
    const auto [cpu, memory] = NumaUsed(node, numa.id);
    view.numa.push_back(topology::NumaSlot{numa.id, numa.cpu_milli, numa.cpu_milli - std::min(numa.cpu_milli, cpu),
                                           numa.memory_mib, numa.memory_mib - std::min(numa.memory_mib, memory)});
  }
  FillNumaCpuIds(view, node);
  return view;
}

void ClusterState::FillNodeLoad(topology::NodeView& view, const NodeRecord& node) const {
  view.cpu_milli_free = node.spec.cpu_milli - std::min(node.spec.cpu_milli, node.cpu_milli_used);
  view.memory_mib_free = node.spec.memory_mib - std::min(node.spec.memory_mib, node.memory_mib_used);
  for (size_t i = 0; i < node.spec.gpus.size() && i < view.gpus.size(); ++i) {
    FillGpuLoad(view.gpus[i], node, node.spec.gpus[i]);
  }
  for (size_t i = 0; i < node.spec.numa.size() && i < view.numa.size(); ++i) {
    const NumaInfo& numa = node.spec.numa[i];
    const auto [cpu, memory] = NumaUsed(node, numa.id);
    view.numa[i].cpu_milli_free = numa.cpu_milli - std::min(numa.cpu_milli, cpu);
    view.numa[i].memory_mib_free = numa.memory_mib - std::min(numa.memory_mib, memory);
  }
  FillNumaCpuIds(view, node);
}

namespace {

// Per task group: replicas that count toward its gang minimum right now.
std::vector<uint32_t> ActivePerGroup(const JobRecord& job) {
  std::vector<uint32_t> active(job.spec.tasks.size(), 0);
  for (const auto& task : job.tasks) {
    if ((HoldsResources(task.state) && !task.stop_requested) || task.state == TaskState::kSucceeded) ++active[task.group];
  }
  return active;
}

}  // namespace

topology::ClusterView ClusterState::BuildView(int64_t now_ms) const {
  topology::ClusterView view;
  ViewCursor cursor;
  RefreshView(view, cursor, now_ms);
  return view;
}

void ClusterState::RefreshView(topology::ClusterView& view, ViewCursor& cursor, int64_t now_ms) const {
  // Nodes are never removed, so the same count means the same nodes in the
  // same (name) order; a name that does not match says otherwise anyway.
  bool incremental = cursor.generation == generation_ && view.nodes.size() == nodes_.size();
  if (incremental) {
    size_t i = 0;
    for (const auto& [name, node] : nodes_) {
      topology::NodeView& slot = view.nodes[i++];
      if (slot.name != name) {
        incremental = false;
        break;
      }
      if (node.spec_version > cursor.version) {
        slot = ToNodeView(name, node);
      } else if (node.view_version > cursor.version) {
        FillNodeLoad(slot, node);  // the common change: tasks bound or gone
      }
    }
  }
  if (!incremental) {
    view.nodes.clear();
    view.nodes.reserve(nodes_.size());
    for (const auto& [name, node] : nodes_) view.nodes.push_back(ToNodeView(name, node));
  }
  cursor = ViewCursor{generation_, version_};

  view.queues.clear();
  for (const auto& [name, queue] : queues_) {
    topology::QueueView& out = view.queues.emplace_back(topology::QueueView{
        name, queue.spec.parent, queue.spec.capability, queue.spec.deserved, queue.spec.guarantee, queue.spec.pools});
    // Validated at the edge; a name this build does not know is left out.
    out.preempting_classes.clear();
    for (const auto& cls : queue.spec.preempting_classes) {
      if (auto c = PriorityClassFromString(cls)) out.preempting_classes.push_back(*c);
    }
    out.low_reclaimable = queue.spec.low_reclaimable;
  }
  BuildRunning(view, now_ms);
  BuildPending(view, now_ms);
}

// Rebuilt every cycle from every task holding resources (100,000 at the
// issue-49 scale, on the leader's loop): each job is looked up once, not
// twice per task (a std::map of every retained job: a million at that scale,
// twenty cache misses a lookup), the node comes with the task from the
// node's own list instead of a lookup by name, and the previous cycle's
// entries are overwritten in place, as BuildPending's are. Every field is
// assigned on every pass. The order stays by task id, the order the
// scheduler has always been given them in (ties among victims break by it).
void ClusterState::BuildRunning(topology::ClusterView& view, int64_t now_ms) const {
  using NodeEntry = std::map<std::string, NodeRecord>::value_type;
  std::vector<std::pair<TaskId, const NodeEntry*>> held;
  held.reserve(active_count_);
  for (const NodeEntry& entry : nodes_) {
    for (const TaskId& id : entry.second.tasks) held.emplace_back(id, &entry);
  }
  std::sort(held.begin(), held.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t used = 0;
  const JobRecord* job = nullptr;
  std::vector<uint32_t> active;
  for (const auto& [id, entry] : held) {
    if (job == nullptr || job->id != id.job) {  // sorted by job: once per job
      job = FindJob(id.job);
      if (job == nullptr) continue;
      active = ActivePerGroup(*job);
    }
    if (id.index >= job->tasks.size() || job->tasks[id.index].id != id) continue;
    const TaskRecord* task = &job->tasks[id.index];
    // The node whose list holds the task is the one it names; a lookup only
    // if they ever disagreed.
    const NodeRecord* node = entry->first == task->node ? &entry->second : FindNode(task->node);
    if (used == view.running.size()) view.running.emplace_back();
    topology::RunningTask& running = view.running[used++];
    running.job = job->id;
    running.task_index = id.index;
    running.group = task->group;
    running.queue = job->spec.queue;
    running.user = job->spec.user;
    running.priority_class = PriorityClassFromString(job->spec.priority_class).value_or(PriorityClass::kMedium);
    running.priority = job->spec.priority;
    running.node = task->node;
    // Replicas are oversubscription: no GPU of the queue's, and evicting
    // one frees no GPU anyone else could take.
    running.gpus = task->grant().time_slice ? 0 : static_cast<uint32_t>(task->gpu_indices.size());
    running.gpu_model.clear();
    running.gpu_memory_mib = 0;
    if (node != nullptr && !task->gpu_indices.empty()) {
      for (const auto& gpu : node->spec.gpus) {
        if (gpu.index == task->gpu_indices.front()) running.gpu_model = gpu.model;
        const bool held_gpu = std::find(task->gpu_indices.begin(), task->gpu_indices.end(), gpu.index) !=
                              task->gpu_indices.end();
        if (held_gpu && task->grant().Empty()) running.gpu_memory_mib += gpu.memory_mib;
      }
      if (!task->grant().Empty()) running.gpu_memory_mib = task->grant().gpu_memory_mib * task->gpu_indices.size();
    }
    running.cpu_milli = task->cpu_milli;
    running.memory_mib = task->memory_mib;
    running.bind_order = task->bind_ms;
    running.group_min = job->spec.tasks[task->group].MinReplicas();
    running.group_active = active[task->group];
    running.stopping = task->stop_requested;
    running.stopping_for = task->evicted ? task->evicted_for() : 0;
    running.evicted_by = task->evicted_by();
    running.remaining_ms = -1;
    if (job->spec.max_runtime_ms != 0) {
      // A task bound but not started yet starts no earlier than now.
      const int64_t start = task->start_ms != 0 ? task->start_ms : now_ms;
      const int64_t ends = start + static_cast<int64_t>(job->spec.max_runtime_ms);
      running.remaining_ms = std::max<int64_t>(ends - now_ms, 0);
    }
  }
  view.running.resize(used);
}

// Rebuilt every cycle from the pending set, which a burst makes large (10k
// jobs in gpool-bench-e2e's drain): the previous cycle's entries are
// overwritten in place rather than destroyed and made again, so their strings,
// maps and vectors keep their storage, and the vector does not regrow. Every
// field is assigned on every pass: an entry reused for another job keeps
// nothing of the one before (issue 49).
void ClusterState::BuildPending(topology::ClusterView& view, int64_t now_ms) const {
  size_t used = 0;
  for (uint64_t id : pending_) {
    const JobRecord& job = jobs_.at(id);
    if (job.cancel_requested) continue;
    // Issue 50: a queue whose credit account is used up admits no new work;
    // a job with some task placed already keeps its place.
    if (OutOfCredit(job.spec.queue) && std::all_of(job.tasks.begin(), job.tasks.end(), [](const TaskRecord& t) {
          return t.state == TaskState::kPending;
        })) {
      continue;
    }
    if (used == view.pending.size()) view.pending.emplace_back();
    topology::PendingJob& pj = view.pending[used];
    pj.id = job.id;
    pj.priority = job.spec.priority;
    pj.arrival = job.arrival;
    pj.queue = job.spec.queue;
    pj.priority_class = PriorityClassFromString(job.spec.priority_class).value_or(PriorityClass::kMedium);
    pj.pool = job.spec.pool;
    pj.user = job.spec.user;
    pj.node_selector = job.spec.node_selector;
    pj.prefer_labels = job.spec.prefer_labels;
    pj.tolerations = job.spec.tolerations;
    pj.numa_policy = NumaPolicyFromString(job.spec.numa_policy).value_or(NumaPolicy::kNone);
    pj.network_mode = NetworkModeFromString(job.spec.network_mode).value_or(NetworkMode::kNone);
    pj.node_policy = PlacementPolicyFromString(job.spec.node_policy).value_or(PlacementPolicy::kDefault);
    pj.gpu_policy = PlacementPolicyFromString(job.spec.gpu_policy).value_or(PlacementPolicy::kDefault);
    pj.network_tier = job.spec.network_tier;
    pj.gpu_uuid_allow = job.spec.gpu_uuid_allow;
    pj.gpu_uuid_deny = job.spec.gpu_uuid_deny;
    const auto group_active = ActivePerGroup(job);
    pj.groups.clear();
    for (size_t g = 0; g < job.spec.tasks.size(); ++g) {
      pj.groups.push_back(
          topology::GroupRule{job.spec.tasks[g].MinReplicas(), group_active[g], job.spec.tasks[g].network_tier});
    }
    pj.tasks.clear();
    // A group with scale rules offers only what its committed target leaves
    // room for (lowest replicas first); the rest wait for a rule to grow it.
    // (Allocated only for such jobs: this loop runs for every pending job.)
    std::vector<uint32_t> scaled_room;
    const bool scaled = internal::HasScaleRule(job.spec);
    for (size_t g = 0; scaled && g < job.spec.tasks.size(); ++g) {
      const uint32_t target = job.ReplicaTarget(static_cast<uint32_t>(g));
      scaled_room.push_back(target > group_active[g] ? target - group_active[g] : 0);
    }
    for (const auto& task : job.tasks) {
      if (task.state != TaskState::kPending) continue;
      if (scaled) {
        if (scaled_room[task.group] == 0) continue;
        --scaled_room[task.group];
      }
      pj.tasks.push_back(topology::PendingTask{task.id.index, task.group, job.spec.tasks[task.group].resources});
    }
    if (now_ms - job.claim_ms() < kClaimLapseMs) {
      pj.claimed_nodes = job.claimed_nodes();
    } else {
      pj.claimed_nodes.clear();
    }
    const int64_t since = std::max(job.submit_ms, job.requeue_ms());
    pj.waiting_ms = now_ms > since ? now_ms - since : 0;
    pj.max_runtime_ms = static_cast<int64_t>(job.spec.max_runtime_ms);
    if (!pj.tasks.empty()) ++used;  // else the slot is overwritten by the next job, or trimmed below
  }
  view.pending.resize(used);
}

}  // namespace gpool::state
