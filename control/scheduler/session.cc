// Session (session.h): building the cycle's working copy of the cluster, the
// index of nodes by pool and free-GPU count that FindNode searches, and
// binding what a task or gang placed. Feasibility is in session_checks.cc,
// device choice in session_devices.cc, explanations in session_explain.cc,
// scores in node_score.cc, the search itself in session_find.cc.
#include "control/scheduler/session.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <string_view>
#include <tuple>

#include "control/scheduler/node_name_index.h"

namespace gpool::scheduler {

using topology::PendingReason;
using topology::PendingTask;

uint32_t WorkJob::GroupMin(uint32_t group) const {
  if (view->groups.empty()) return static_cast<uint32_t>(view->tasks.size());
  return group < view->groups.size() ? view->groups[group].min : 0;
}

bool WorkJob::MinimumMet() const {
  for (uint32_t g = 0; g < active.size(); ++g) {
    if (active[g] < GroupMin(g)) return false;
  }
  return true;
}

namespace {

// A device some sharing tenant, MIG layout or core holds: its load must be tracked.
bool HasSharingState(const topology::GpuSlot& gpu) {
  return gpu.tenants > 0 || !gpu.mig_mode.empty() || gpu.cores > 0;
}

// Free whole or held whole, nothing in between: FreeOf reads 1000 or 0 for
// it (ViewFreeMilli's fast case), whatever happens to it this cycle short of
// a share.
bool WholeOnlyDevice(const topology::GpuSlot& gpu) {
  return gpu.tenants == 0 && gpu.mig.empty() && gpu.cores == 0 && gpu.cores_used.empty() && gpu.mig_mode.empty() &&
         !gpu.mig_enabled;
}

// What WorkNode::twin_class groups nodes by.
struct TwinTraits {
  std::string_view model;
  uint64_t device_memory = 0;
  uint64_t cpu_total = 0;
  uint64_t memory_total = 0;
  uint32_t usable_gpus = 0;
  uint32_t healthy_gpus = 0;
  NodePool pool = NodePool::kPublic;
  auto operator<=>(const TwinTraits&) const = default;
};


}  // namespace

Session::Session(const topology::ClusterView& view, const SchedulerConfig& config)
    : config_(config), queues_(view.queues, {}) {
  // One pass over every device of the cluster gathers all the session needs
  // of them (800,000 devices at 100,000 nodes: each further pass over them
  // cost tens of milliseconds, more than the work it did): the GPU models
  // the queue tree is built with, each node's free and usable devices, the
  // devices' sizes the observed workload is measured in, and the free share
  // the fragmentation measure's host claim weighs.
  const bool fragmentation = FragmentationAware();
  const bool observe = fragmentation && view.workload.empty();
  const bool host_claim = fragmentation && config_.node_order.strategy == Strategy::kFragmentation;
  std::set<std::string> models;
  const std::string* last_model = nullptr;  // nodes rarely mix models: most devices skip the set
  std::map<uint64_t, size_t> sizes;  // device memory -> devices, counted by runs of one size
  uint64_t run_memory = 0;
  size_t run = 0;
  ClusterFree free;  // summed node by node, device by device, as FreeOf lists them
  uint64_t gpu_memory_total = 0;
  nodes_.reserve(view.nodes.size());
  // Neighbouring nodes are mostly alike (one pool, one vendor and model):
  // the previous node's answers save a parse per node.
  const topology::NodeView* previous_node = nullptr;
  std::map<TwinTraits, uint32_t> twin_classes;
  std::vector<uint64_t> first_device_memory;  // for ObservedWorkload
  if (observe) first_device_memory.reserve(view.nodes.size());
  for (const auto& node_view : view.nodes) {
    WorkNode node;
    node.view = &node_view;
    const WorkNode* previous_work = previous_node != nullptr ? &nodes_.back() : nullptr;
    node.pool = previous_work != nullptr && previous_node->pool == node_view.pool ? previous_work->pool
                                                                                  : PoolOf(node_view.pool);
    node.ready = node_view.ready;
    node.cordoned = node_view.cordoned;
    node.tainted = !node_view.taints.empty();
    node.cpu_total = node_view.cpu_milli_total;
    node.memory_total = node_view.memory_mib_total;
    node.cpu_free = node_view.cpu_milli_free;
    node.memory_free = node_view.memory_mib_free;
    if (host_claim) {
      free.cpu_milli += static_cast<double>(node.cpu_free);
      free.memory_mib += static_cast<double>(node.memory_free);
    }
    for (const auto& gpu : node_view.gpus) {
      // Time-sliced GPUs run only replicas (PickTimeSlices): never whole-free.
      const bool sliced = gpu.TimeSliced();
      const bool whole_free = gpu.healthy && !gpu.allocated && !sliced &&
                              (!HasSharingState(gpu) || topology::WholeFree(gpu, topology::DeviceLoad::Of(gpu)));
      node.gpu_free.PushBack(whole_free);
      // Static MIG devices never run whole-GPU work.
      const bool mig_only = MigOnlyDevice(gpu);
      if (gpu.healthy && !mig_only && !sliced) ++node.usable_gpus;
      if (gpu.healthy && !sliced) ++node.healthy_gpus;
      if (gpu.healthy && sliced) {
        ++node.sliced_gpus;
        time_slices_ = true;
      }
      if (whole_free) ++node.free_gpus;
      const bool whole_only = WholeOnlyDevice(gpu);
      // A time-sliced GPU's replicas are a per-node figure the twin key
      // does not hold: such a node is never a twin.
      node.plain_devices = node.plain_devices && whole_only && !sliced;
      // One comparison per device, with the node's first: the set of models
      // is then asked once per node of one model (below).
      if (node.uniform_model && &gpu != &node_view.gpus.front() && gpu.model != node_view.gpus.front().model) {
        node.uniform_model = false;
      }
      if (observe) {
        if (run > 0 && gpu.memory_mib != run_memory) {
          sizes[run_memory] += run;
          run = 0;
        }
        run_memory = gpu.memory_mib;
        ++run;
      }
      if (host_claim && gpu.healthy && !mig_only && !sliced) {
        free.gpu_milli += whole_only ? (gpu.allocated ? 0 : 1000) : ViewFreeMilli(gpu);  // ViewFreeMilli's fast case
      }
      if (node_view.ready && gpu.healthy) gpu_memory_total += gpu.memory_mib;
    }
    for (const auto& gpu : node_view.gpus) {
      if (last_model == nullptr || *last_model != gpu.model) {
        models.insert(gpu.model);
        last_model = &gpu.model;
      }
      if (node.uniform_model) break;  // the first device's model is every device's
    }
    if (!node_view.gpus.empty()) {
      node.gpu_model = node_view.gpus.front().model;
      const bool same_kind = previous_work != nullptr && !previous_node->gpus.empty() &&
                             previous_work->gpu_model == node.gpu_model &&
                             previous_node->gpus.front().vendor == node_view.gpus.front().vendor;
      node.family = same_kind ? previous_work->family : FamilyOf(node_view.gpus.front().vendor, node.gpu_model);
    }
    if (observe) first_device_memory.push_back(node_view.gpus.empty() ? 0 : node_view.gpus.front().memory_mib);
    const bool one_size = std::all_of(node_view.gpus.begin(), node_view.gpus.end(), [&](const topology::GpuSlot& gpu) {
      return gpu.memory_mib == node_view.gpus.front().memory_mib;
    });
    if (node.uniform_model && one_size && node.plain_devices && node.family == DeviceFamily::kGeneric) {
      const bool gpus = !node_view.gpus.empty();
      const TwinTraits traits{gpus ? std::string_view(node_view.gpus.front().model) : std::string_view(),
                              gpus ? node_view.gpus.front().memory_mib : 0, node.cpu_total, node.memory_total,
                              node.usable_gpus, node.healthy_gpus, node.pool};
      node.twin_class = twin_classes.try_emplace(traits, static_cast<uint32_t>(twin_classes.size())).first->second;
    }
    largest_gpus_ = std::max(largest_gpus_, node.usable_gpus);
    largest_cpu_ = std::max(largest_cpu_, node_view.cpu_milli_total);
    largest_memory_ = std::max(largest_memory_, node_view.memory_mib_total);
    nodes_.push_back(std::move(node));
    previous_node = &node_view;
  }
  if (run > 0) sizes[run_memory] += run;

  // The queue tree knows the models now; what needs it is read from the
  // work nodes, not the view's devices.
  queues_ = QueueTree(view.queues, std::vector<std::string>(models.begin(), models.end()));
  Amounts totals(queues_.resource_count(), 0);
  totals[kGpuMemory] = gpu_memory_total;
  buckets_.assign(kNodePoolCount, std::vector<std::vector<uint32_t>>(largest_gpus_ + 1));
  position_.assign(nodes_.size(), 0);
  std::vector<uint32_t> owned;  // nodes a queue owns
  // This pass and the ones below read the work nodes in order, and the
  // view's node only where it must (an exclusive pool, mixed models): at
  // 100,000 nodes each pass over the view's nodes was a miss per node.
  for (size_t i = 0; i < nodes_.size(); ++i) {
    WorkNode& node = nodes_[i];
    if (node.pool == NodePool::kExclusive && !node.view->pool_queue.empty()) {
      node.owner = queues_.Find(node.view->pool_queue).value_or(WorkNode::kUnknownOwner);
      lendable_exclusive_ = lendable_exclusive_ || node.owner >= 0;
      if (node.owner >= 0) owned.push_back(static_cast<uint32_t>(i));
    }
    if (i == 0 || nodes_[i - 1].gpu_model != node.gpu_model) {
      node.model_index = queues_.ModelIndex(node.gpu_model);
    } else {
      node.model_index = nodes_[i - 1].model_index;
    }
    if (!node.ready) {
      ++not_ready_nodes_;
      continue;
    }
    if (node.cordoned) {
      ++cordoned_nodes_;
    } else {
      ++schedulable_nodes_;
      ++schedulable_in_pool_[static_cast<size_t>(node.pool)];
      BucketInsert(i);
    }
    totals[kGpu] += node.usable_gpus;
    totals[kCpu] += node.cpu_total;
    totals[kMemory] += node.memory_total;
    if (node.uniform_model) {
      if (node.model_index) totals[*node.model_index] += node.healthy_gpus;
      continue;
    }
    for (const auto& gpu : node.view->gpus) {
      if (!gpu.healthy) continue;
      if (const auto model = queues_.ModelIndex(gpu.model)) ++totals[*model];
    }
  }
  queues_.SetClusterTotals(totals);

  const NodeNameIndex node_index(view.nodes);
  running_.reserve(view.running.size());
  // How many tasks run on each node (then where each node's part of
  // running_by_node_ starts): the pass over the tasks counts instead of
  // appending to a list per node, which touched a cold work node per task.
  std::vector<uint32_t> running_at(nodes_.size() + 1, 0);
  // Tasks of one job sit side by side in the view, mostly on one queue (and
  // often one node): the previous task's answers save a lookup by name.
  const topology::RunningTask* previous = nullptr;
  const size_t resources = queues_.resource_count();
  running_charges_.assign(view.running.size() * resources, 0);
  for (const auto& task : view.running) {
    WorkTask work;
    work.view = &task;
    if (previous != nullptr && previous->queue == task.queue) {
      work.queue = running_.back().queue;
    } else {
      work.queue = queues_.Resolve(task.queue);
    }
    if (previous != nullptr && previous->node == task.node) {
      work.node = running_.back().node;
    } else {
      const auto at = node_index.Find(task.node);
      work.node = at ? static_cast<int>(*at) : -1;
    }
    previous = &task;
    work.evicted = task.stopping;
    const std::span<uint64_t> charge(running_charges_.data() + running_.size() * resources, resources);
    queues_.AddDemand(charge, task.gpus, task.cpu_milli, task.memory_mib, task.gpu_model, task.gpu_memory_mib);
    work.charge = charge;
    queues_.Charge(work.queue, work.charge);
    if (work.node >= 0) {
      ++running_at[static_cast<size_t>(work.node) + 1];
      // Victims drain for their preemptor: what they free is its alone.
      if (task.stopping_for != 0) nodes_[static_cast<size_t>(work.node)].claimed_for = task.stopping_for;
    }
    running_.push_back(std::move(work));
  }
  for (size_t i = 1; i < running_at.size(); ++i) running_at[i] += running_at[i - 1];
  {
    std::vector<uint32_t> next(running_at.begin(), running_at.end() - 1);
    running_by_node_.resize(running_at.back());
    for (size_t i = 0; i < running_.size(); ++i) {
      if (running_[i].node >= 0) running_by_node_[next[static_cast<size_t>(running_[i].node)]++] = i;
    }
  }
  auto running_on = [&](size_t node) {
    const size_t count = running_at[node + 1] - running_at[node];
    return std::span<const size_t>(running_by_node_.data() + running_at[node], count);
  };
  for (uint32_t i : owned) {
    WorkNode& node = nodes_[i];
    for (size_t t : running_on(i)) {
      node.owner_busy = node.owner_busy || queues_.InSubtree(running_[t].queue, node.owner);
    }
  }

  jobs_.reserve(view.pending.size());
  size_t active_slots = 0;
  size_t pending_tasks = 0;
  for (const auto& job_view : view.pending) {
    active_slots += std::max<size_t>(1, job_view.groups.size());
    pending_tasks += job_view.tasks.size();
  }
  // A task is bound once at most: the binds never move to a larger array
  // (at 80,000 binds each doubling moved every placement made so far). The
  // pages are touched only as binds are added.
  plan_.binds.reserve(pending_tasks);
  job_active_.assign(active_slots, 0);
  size_t next_active = 0;
  for (const auto& job_view : view.pending) {
    uuid_lists_ = uuid_lists_ || !job_view.gpu_uuid_allow.empty() || !job_view.gpu_uuid_deny.empty();
    WorkJob job;
    job.view = &job_view;
    job.queue = queues_.Resolve(job_view.queue);
    job.queue_pools = queues_.queue(job.queue).pools;
    job.pool = PoolOf(job_view.pool);
    const size_t groups = std::max<size_t>(1, job_view.groups.size());
    job.active = std::span<uint32_t>(job_active_.data() + next_active, groups);
    next_active += groups;
    for (size_t g = 0; g < job_view.groups.size(); ++g) job.active[g] = job_view.groups[g].active;
    jobs_.push_back(std::move(job));
  }
  std::set<uint64_t> draining;
  for (const auto& task : view.running) {
    if (task.stopping_for != 0) draining.insert(task.stopping_for);
  }
  for (auto& job : jobs_) {
    job.victims_draining = draining.count(job.view->id.value()) > 0;
    for (const auto& name : job.view->claimed_nodes) {
      if (const auto at = node_index.Find(name)) nodes_[*at].claimed_for = job.view->id.value();
    }
    job.has_claim = job.victims_draining || !job.view->claimed_nodes.empty();
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    WorkNode& node = nodes_[i];
    node.running = running_on(i);
    smallest_cpu_ = std::min(smallest_cpu_, node.cpu_total);
    smallest_memory_ = std::min(smallest_memory_, node.memory_total);
    smallest_healthy_gpus_ = std::min(smallest_healthy_gpus_, node.healthy_gpus);
    if (i == 0) every_node_model_ = node.gpu_model;
    if (every_node_model_ && (!node.uniform_model || node.gpu_model.empty() || node.gpu_model != *every_node_model_)) {
      every_node_model_.reset();
    }
    if (node.owner != WorkNode::kNoOwner || node.tainted || node.family != DeviceFamily::kGeneric ||
        node.claimed_for != 0 || node.reserved_for != 0) {
      MarkOdd(i);
    }
  }
  if (fragmentation) {
    if (observe) {
      uint64_t common_memory = 0;  // the commonest device size (the smallest of equals)
      size_t most = 0;
      for (const auto& [memory, count] : sizes) {
        if (count > most) std::tie(common_memory, most) = std::tie(memory, count);
      }
      workload_ = ObservedWorkload(view, common_memory, first_device_memory);
    } else {
      workload_ = view.workload;
    }
    workload_ = config_.node_order.strategy == Strategy::kFgd ? CommonestShapes(workload_, kFgdCoverage)
                                                              : CommonestShapes(workload_, 1.0, kMaxScoredShapes);
    if (host_claim) cpu_only_claim_ = CpuOnlyClaimOf(workload_, free);  // fgd's measure has no host part
  }
}

// Without a workload given, the tasks running and waiting now are the best
// guess of what will come. Shares count in thousandths of the GPU they run
// on (waiting ones: of the cluster's commonest GPU).
std::vector<topology::WorkloadShape> Session::ObservedWorkload(const topology::ClusterView& view,
                                                               uint64_t common_memory,
                                                               const std::vector<uint64_t>& first_device_memory) const {
  topology::GpuSlot common;
  common.memory_mib = common_memory;
  WorkloadTally tally;
  // running_ parallels view.running and knows each task's node already.
  for (const WorkTask& work : running_) {
    const topology::RunningTask& task = *work.view;
    uint32_t milli = 1000;
    if (task.gpus > 0 && work.node >= 0) {
      const uint64_t device = first_device_memory[static_cast<size_t>(work.node)];
      const uint64_t each = task.gpu_memory_mib / task.gpus;
      if (device > 0 && each < device) milli = static_cast<uint32_t>((each * 1000 + device - 1) / device);
    }
    tally.Add(task.gpus, milli, task.cpu_milli, "", task.memory_mib);
  }
  for (const auto& job : view.pending) {
    for (const auto& task : job.tasks) {
      const Resources& need = task.resources;
      tally.Add(need.gpus, need.gpus > 0 ? ShareMilli(need, common) : 1000, need.cpu_milli, need.gpu_model,
                need.memory_mib);
    }
  }
  return tally.Shapes();
}

void Session::BucketInsert(size_t node) {
  auto& bucket = buckets_[static_cast<size_t>(nodes_[node].pool)][nodes_[node].free_gpus];
  position_[node] = static_cast<uint32_t>(bucket.size());
  bucket.push_back(static_cast<uint32_t>(node));
}

void Session::BucketRemove(size_t node) {
  auto& bucket = buckets_[static_cast<size_t>(nodes_[node].pool)][nodes_[node].free_gpus];
  const uint32_t slot = position_[node];
  bucket[slot] = bucket.back();
  position_[bucket[slot]] = slot;
  bucket.pop_back();
}

void Session::MarkOdd(size_t node) {
  if (nodes_[node].odd) return;
  nodes_[node].odd = true;
  odd_nodes_.push_back(static_cast<uint32_t>(node));
}

bool Session::PlaceAll(WorkJob& job, const std::vector<const PendingTask*>& tasks, bool ignore_reservations) {
  struct Tentative {
    const PendingTask* task;
    size_t node;
    Placement placement;
  };
  std::vector<Tentative> placed;
  placed.reserve(tasks.size());
  for (const PendingTask* task : tasks) {
    auto node = FindNode(job, *task, ignore_reservations, job.reasons);
    if (!node) {
      for (auto it = placed.rbegin(); it != placed.rend(); ++it) Unplace(job, *it->task, it->node, it->placement);
      return false;
    }
    placed.push_back(Tentative{task, *node, Place(job, *task, *node)});
  }
  for (auto& tentative : placed) Commit(std::move(tentative.placement));
  job.reasons.clear();
  return true;
}

void Session::Commit(Placement placement) {
  plan_.binds.push_back(std::move(placement));
}

void Session::Reserve(size_t node, const WorkJob& job) {
  nodes_[node].reserved_for = job.view->id.value();
  MarkOdd(node);
  reservation_holders_.insert(job.view->id.value());
  int64_t& start = reservation_start_ms_[job.view->id.value()];
  for (size_t i : nodes_[node].running) {
    const WorkTask& task = running_[i];
    if (task.evicted) continue;  // already going
    const int64_t left = task.view->remaining_ms;
    start = std::max(start, left < 0 ? std::numeric_limits<int64_t>::max() : left);
  }
}

void Session::Evict(size_t running_index, const WorkJob& for_job, const std::string& reason) {
  // (The claim on the victim's node is what keeps the freed capacity for
  // for_job; the state machine persists it on the job until it is placed.)
  WorkTask& task = running_[running_index];
  if (user_usage_ && !task.evicted) {
    Amounts& used = (*user_usage_)[{task.queue, task.view->user}];
    for (size_t r = 0; r < 3 && r < used.size(); ++r) used[r] -= std::min(used[r], task.charge[r]);
  }
  task.evicted = true;
  queues_.Refund(task.queue, task.charge);
  if (task.node >= 0) {
    nodes_[static_cast<size_t>(task.node)].claimed_for = for_job.view->id.value();
    MarkOdd(static_cast<size_t>(task.node));
  }
  plan_.evictions.push_back(Eviction{task.view->job, task.view->task_index, for_job.view->id, reason});
}

const Session::UserUsage& Session::RunningUserUsage() {
  if (user_usage_) return *user_usage_;
  user_usage_.emplace();
  for (const auto& task : running_) {
    if (task.evicted) continue;
    auto& used = (*user_usage_)[{task.queue, task.view->user}];
    used.resize(3, 0);
    for (size_t r = 0; r < 3; ++r) used[r] += task.charge[r];
  }
  return *user_usage_;
}

const std::vector<size_t>& Session::JobsByPriorityAndArrival() {
  if (jobs_by_priority_.size() == jobs_.size()) return jobs_by_priority_;
  // The keys are copied next to the index and the index breaks ties, which
  // orders as a stable sort by priority and arrival would, without reading
  // two jobs' views (cold at 75,000 jobs) per comparison.
  struct Ranked {
    int32_t priority;
    uint64_t arrival;
    size_t index;
  };
  std::vector<Ranked> ranked;
  ranked.reserve(jobs_.size());
  for (size_t i = 0; i < jobs_.size(); ++i) ranked.push_back({jobs_[i].view->priority, jobs_[i].view->arrival, i});
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.arrival != b.arrival) return a.arrival < b.arrival;
    return a.index < b.index;
  });
  jobs_by_priority_.resize(jobs_.size());
  for (size_t i = 0; i < ranked.size(); ++i) jobs_by_priority_[i] = ranked[i].index;
  return jobs_by_priority_;
}

}  // namespace gpool::scheduler
