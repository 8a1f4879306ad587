// Session (session.h): building the cycle's working copy of the cluster, the
// index of nodes by pool and free-GPU count that FindNode searches, and
// binding what a task or gang placed. Feasibility is in session_checks.cc,
// device choice in session_devices.cc, explanations in session_explain.cc,
// scores in node_score.cc.
#include "control/scheduler/session.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
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
    node.gpu_free.reserve(node_view.gpus.size());
    if (host_claim) {
      free.cpu_milli += static_cast<double>(node.cpu_free);
      free.memory_mib += static_cast<double>(node.memory_free);
    }
    for (const auto& gpu : node_view.gpus) {
      const bool whole_free = gpu.healthy && !gpu.allocated &&
                              (!HasSharingState(gpu) || topology::WholeFree(gpu, topology::DeviceLoad::Of(gpu)));
      node.gpu_free.push_back(whole_free);
      // Static MIG devices never run whole-GPU work.
      const bool mig_only = MigOnlyDevice(gpu);
      if (gpu.healthy && !mig_only) ++node.usable_gpus;
      if (gpu.healthy) ++node.healthy_gpus;
      if (whole_free) ++node.free_gpus;
      if (last_model == nullptr || *last_model != gpu.model) {
        models.insert(gpu.model);
        last_model = &gpu.model;
      }
      if (observe) {
        if (run > 0 && gpu.memory_mib != run_memory) {
          sizes[run_memory] += run;
          run = 0;
        }
        run_memory = gpu.memory_mib;
        ++run;
      }
      if (host_claim && gpu.healthy && !mig_only) free.gpu_milli += ViewFreeMilli(gpu);
      if (node_view.ready && gpu.healthy) gpu_memory_total += gpu.memory_mib;
    }
    node.uniform_model = std::all_of(node_view.gpus.begin(), node_view.gpus.end(), [&](const topology::GpuSlot& gpu) {
      return gpu.model == node_view.gpus.front().model;
    });
    if (!node_view.gpus.empty()) {
      node.gpu_model = node_view.gpus.front().model;
      const bool same_kind = previous_work != nullptr && !previous_node->gpus.empty() &&
                             previous_work->gpu_model == node.gpu_model &&
                             previous_node->gpus.front().vendor == node_view.gpus.front().vendor;
      node.family = same_kind ? previous_work->family : FamilyOf(node_view.gpus.front().vendor, node.gpu_model);
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
  for (size_t i = 0; i < nodes_.size(); ++i) {
    WorkNode& node = nodes_[i];
    const topology::NodeView& node_view = *node.view;
    if (!node_view.pool_queue.empty() && node.pool == NodePool::kExclusive) {
      node.owner = queues_.Find(node_view.pool_queue).value_or(WorkNode::kUnknownOwner);
      lendable_exclusive_ = lendable_exclusive_ || node.owner >= 0;
    }
    if (i == 0 || nodes_[i - 1].gpu_model != node.gpu_model) {
      node.model_index = queues_.ModelIndex(node.gpu_model);
    } else {
      node.model_index = nodes_[i - 1].model_index;
    }
    if (!node_view.ready) continue;
    totals[kGpu] += node.usable_gpus;
    totals[kCpu] += node_view.cpu_milli_total;
    totals[kMemory] += node_view.memory_mib_total;
    if (node.uniform_model) {
      if (node.model_index) totals[*node.model_index] += node.healthy_gpus;
      continue;
    }
    for (const auto& gpu : node_view.gpus) {
      if (!gpu.healthy) continue;
      if (const auto model = queues_.ModelIndex(gpu.model)) ++totals[*model];
    }
  }
  queues_.SetClusterTotals(totals);

  buckets_.assign(kNodePoolCount, std::vector<std::vector<uint32_t>>(largest_gpus_ + 1));
  position_.assign(nodes_.size(), 0);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const topology::NodeView& node_view = *nodes_[i].view;
    if (!node_view.ready) {
      ++not_ready_nodes_;
    } else if (node_view.cordoned) {
      ++cordoned_nodes_;
    } else {
      ++schedulable_nodes_;
      ++schedulable_in_pool_[static_cast<size_t>(nodes_[i].pool)];
      BucketInsert(i);
    }
  }

  const NodeNameIndex node_index(view.nodes);
  running_.reserve(view.running.size());
  // Tasks of one job sit side by side in the view, mostly on one queue (and
  // often one node): the previous task's answers save a lookup by name.
  const topology::RunningTask* previous = nullptr;
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
    work.charge = queues_.Demand(task.gpus, task.cpu_milli, task.memory_mib, task.gpu_model, task.gpu_memory_mib);
    queues_.Charge(work.queue, work.charge);
    if (work.node >= 0) {
      WorkNode& node = nodes_[static_cast<size_t>(work.node)];
      node.owner_busy = node.owner_busy || (node.owner >= 0 && queues_.InSubtree(work.queue, node.owner));
      nodes_[static_cast<size_t>(work.node)].running.push_back(running_.size());
      // Victims drain for their preemptor: what they free is its alone.
      if (task.stopping_for != 0) nodes_[static_cast<size_t>(work.node)].claimed_for = task.stopping_for;
    }
    running_.push_back(std::move(work));
  }

  jobs_.reserve(view.pending.size());
  for (const auto& job_view : view.pending) {
    uuid_lists_ = uuid_lists_ || !job_view.gpu_uuid_allow.empty() || !job_view.gpu_uuid_deny.empty();
    WorkJob job;
    job.view = &job_view;
    job.queue = queues_.Resolve(job_view.queue);
    job.queue_pools = queues_.queue(job.queue).pools;
    job.pool = PoolOf(job_view.pool);
    const size_t groups = std::max<size_t>(1, job_view.groups.size());
    job.active.assign(groups, 0);
    for (size_t g = 0; g < job_view.groups.size(); ++g) job.active[g] = job_view.groups[g].active;
    job.placed.assign(job_view.tasks.size(), false);
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
    const WorkNode& node = nodes_[i];
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
      workload_ = ObservedWorkload(view, common_memory);
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
                                                               uint64_t common_memory) const {
  topology::GpuSlot common;
  common.memory_mib = common_memory;
  std::vector<topology::WorkloadShape> samples;
  samples.reserve(view.running.size() + view.pending.size());
  // running_ parallels view.running and knows each task's node already.
  for (const WorkTask& work : running_) {
    const topology::RunningTask& task = *work.view;
    topology::WorkloadShape shape{task.gpus, 1000, task.cpu_milli, "", 0, task.memory_mib};
    const topology::NodeView* node = work.node >= 0 ? nodes_[static_cast<size_t>(work.node)].view : nullptr;
    if (task.gpus > 0 && node != nullptr && !node->gpus.empty()) {
      const uint64_t device = node->gpus.front().memory_mib;
      const uint64_t each = task.gpu_memory_mib / task.gpus;
      if (device > 0 && each < device) shape.gpu_milli = static_cast<uint32_t>((each * 1000 + device - 1) / device);
    }
    samples.push_back(std::move(shape));
  }
  for (const auto& job : view.pending) {
    for (const auto& task : job.tasks) {
      const Resources& need = task.resources;
      samples.push_back({need.gpus, need.gpus > 0 ? ShareMilli(need, common) : 1000, need.cpu_milli, need.gpu_model, 0,
                         need.memory_mib});
    }
  }
  return TargetWorkload(samples);
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

std::optional<size_t> Session::FindNode(const WorkJob& job, const PendingTask& task, bool ignore_reservations,
                                        std::vector<PendingReason>& reasons, const std::vector<bool>* allowed) {
  // Holders of claims or reservations see nodes nobody else may use, and a
  // narrowed search sees fewer, so their failures say nothing about the
  // shape in general.
  const bool holder = job.has_claim || HoldsReservation(job) || allowed != nullptr;
  std::string& key = shape_key_;
  if (!holder) {
    ShapeKey(job, task, ignore_reservations, key);
    auto cached = failed_shapes_.find(key);
    if (cached != failed_shapes_.end() && cached->second.first == generation_) {
      reasons.insert(reasons.end(), cached->second.second.begin(), cached->second.second.end());
      return std::nullopt;
    }
  }
  ShortNodes* short_nodes = nullptr;
  if (!holder) {
    auto& entry = short_nodes_[key];
    if (entry.generation != generation_) {
      entry.generation = generation_;
      entry.reject.clear();
      entry.listed.clear();
    }
    short_nodes = &entry;
  }
  // Every rejection is counted as it happens, so a task that finds no node
  // is explained from this one search.
  RejectCounts counts{};
  auto check = [&](uint32_t node_index) {
    if (short_nodes && !short_nodes->listed.empty() && short_nodes->reject[node_index] != 0) {
      ++counts[short_nodes->reject[node_index] - 1];
      return false;
    }
    auto reject = Check(job, task, nodes_[node_index], ignore_reservations);
    if (!reject) return true;
    ++counts[static_cast<size_t>(*reject)];
    if (short_nodes && (*reject == Reject::kCpu || *reject == Reject::kMemory)) {
      if (short_nodes->listed.empty()) short_nodes->reject.assign(nodes_.size(), 0);
      short_nodes->reject[node_index] = static_cast<uint8_t>(static_cast<size_t>(*reject) + 1);
      short_nodes->listed.push_back(node_index);
    }
    return false;
  };
  const NodePool pool = job.pool;
  // Shares and MIG instances fit on nodes without a whole free GPU too.
  const uint32_t need = task.resources.Whole() ? task.resources.gpus : 0;
  std::optional<size_t> best;
  NodeScore best_score;
  uint32_t found = 0;
  const uint32_t wanted = std::max<uint32_t>(1, config_.node_order.candidates);
  const auto& pool_buckets = buckets_[static_cast<size_t>(pool)];
  // Every strategy but spread looks at the fullest nodes first: with a
  // candidate limit, those are the ones worth scoring. A job's own node
  // policy decides for its tasks.
  const PlacementPolicy own = job.view->node_policy;
  const bool binpack = own == PlacementPolicy::kDefault ? config_.node_order.strategy != Strategy::kSpread
                                                        : own == PlacementPolicy::kBinpack;
  const int top = static_cast<int>(largest_gpus_);
  for (int step = 0; step <= top && found < wanted; ++step) {
    const int b = binpack ? static_cast<int>(need) + step : top - step;
    if (b < static_cast<int>(need) || b > top) continue;
    for (uint32_t node_index : pool_buckets[static_cast<size_t>(b)]) {
      if (allowed != nullptr && !(*allowed)[node_index]) continue;
      if (!check(node_index)) continue;
      const NodeScore score = Score(job, task, nodes_[node_index]);
      if (!best || score > best_score || (score == best_score && node_index < *best)) {
        best = node_index;
        best_score = score;
      }
      if (++found >= wanted) break;
    }
  }
  if (best || allowed != nullptr) return best;
  // Nothing fits: every node of the pool with enough free GPUs was checked.
  // The rest were not searched: those with fewer free GPUs are checked now
  // for the record, and the unschedulable or other-pool ones are counted
  // under the checks that come first in the chain (not ready, cordoned,
  // another pool) without looking at them.
  if (FewerGpusFailOnGpus(job, task)) {
    // Checking each of them (most of the cluster when it is full) would
    // count them all under kGpus but for the odd nodes and those remembered
    // short for the shape: those are checked or counted alone, the rest in
    // bulk, so the explanation costs what the exceptions do.
    auto fewer = [&](const WorkNode& node) {
      return node.ready && !node.cordoned && node.pool == pool && node.free_gpus < need;
    };
    uint32_t plain = 0;
    for (int b = 0; b < static_cast<int>(need) && b <= top; ++b) {
      plain += static_cast<uint32_t>(pool_buckets[static_cast<size_t>(b)].size());
    }
    for (uint32_t node_index : odd_nodes_) {
      if (!fewer(nodes_[node_index])) continue;
      --plain;
      check(node_index);
    }
    if (short_nodes) {
      for (uint32_t node_index : short_nodes->listed) {
        const WorkNode& node = nodes_[node_index];
        if (node.odd || !fewer(node)) continue;
        --plain;
        ++counts[short_nodes->reject[node_index] - 1];
      }
    }
    counts[static_cast<size_t>(Reject::kGpus)] += plain;
  } else {
    for (int b = 0; b < static_cast<int>(need) && b <= top; ++b) {
      for (uint32_t node_index : pool_buckets[static_cast<size_t>(b)]) check(node_index);
    }
  }
  counts[static_cast<size_t>(Reject::kNotReady)] += not_ready_nodes_;
  counts[static_cast<size_t>(Reject::kCordoned)] += cordoned_nodes_;
  counts[static_cast<size_t>(Reject::kPool)] += schedulable_nodes_ - schedulable_in_pool_[static_cast<size_t>(pool)];
  auto explained = Explain(task, counts);
  reasons.insert(reasons.end(), explained.begin(), explained.end());
  if (!holder) failed_shapes_[key] = {generation_, std::move(explained)};
  return std::nullopt;
}

bool Session::FewerGpusFailOnGpus(const WorkJob& job, const PendingTask& task) const {
  // Every check before the free-GPU one passes on a node that is not odd,
  // for a job that asks for nothing but whole GPUs, CPU and memory in a
  // shared pool its queue may use.
  const Resources& need = task.resources;
  const topology::PendingJob& spec = *job.view;
  // A model pinned passes on every node when all have that model only and
  // enough healthy GPUs of it.
  const bool model_passes =
      need.gpu_model.empty() || (every_node_model_ && GpuModelAllowed(need.gpu_model, *every_node_model_) &&
                                 need.gpus <= smallest_healthy_gpus_);
  return need.Whole() && need.gpus > 0 && model_passes && need.cpu_milli <= smallest_cpu_ &&
         need.memory_mib <= smallest_memory_ && job.pool != NodePool::kExclusive && !job.borrowing &&
         ((job.queue_pools >> static_cast<unsigned>(job.pool)) & 1u) != 0 && spec.node_selector.empty();
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
  for (auto& [task, node, placement] : placed) Commit(job, *task, std::move(placement));
  job.reasons.clear();
  return true;
}

void Session::Commit(WorkJob& job, const PendingTask& task, Placement placement) {
  job.placed[static_cast<size_t>(&task - job.view->tasks.data())] = true;
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
  jobs_by_priority_.resize(jobs_.size());
  for (size_t i = 0; i < jobs_.size(); ++i) jobs_by_priority_[i] = i;
  std::stable_sort(jobs_by_priority_.begin(), jobs_by_priority_.end(), [&](size_t a, size_t b) {
    const auto& x = *jobs_[a].view;
    const auto& y = *jobs_[b].view;
    if (x.priority != y.priority) return x.priority > y.priority;
    return x.arrival < y.arrival;
  });
  return jobs_by_priority_;
}

}  // namespace gpool::scheduler
