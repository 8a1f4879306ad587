#include "control/scheduler/session.h"

#include "control/scheduler/device_pick.h"
#include "control/scheduler/gpu_picker.h"

#include <algorithm>
#include <set>

namespace gpool::scheduler {

using topology::PendingTask;

std::string_view RejectText(Reject reject) {
  switch (reject) {
    case Reject::kNotReady: return "node not ready";
    case Reject::kCordoned: return "node cordoned";
    case Reject::kPool: return "in another pool";
    case Reject::kSelector: return "node selector does not match";
    case Reject::kTaint: return "taint not tolerated";
    case Reject::kGpuModel: return "no GPUs of the requested model";
    case Reject::kNuma: return "NUMA not fit";
    case Reject::kClaimed: return "claimed by a preempting job";
    case Reject::kReserved: return "held for a large waiting job";
    case Reject::kExclusiveBusy: return "exclusive node in use";
    case Reject::kExclusiveWhole: return "exclusive pool takes whole nodes only";
    case Reject::kGpus: return "insufficient GPUs";
    case Reject::kGpuUuid: return "GPUs excluded by the job's UUID lists";
    case Reject::kShareRoom: return "no GPU with room for the share";
    case Reject::kShareQos: return "GPUs shared under another QoS";
    case Reject::kShareMode: return "no GPU free to share";
    case Reject::kMigFit: return "no MIG instance of the profile fits";
    case Reject::kMigUnsupported: return "no MIG-capable GPU";
    case Reject::kVendorRule: return "no device set the vendor's placement rule allows";
    case Reject::kModelCapability: return "queue at capability for the node's GPU model";
    case Reject::kGpuMemoryCapability: return "queue at capability for gpu_memory";
    case Reject::kCpu: return "insufficient CPU";
    case Reject::kCpuKeptForGpus: return "CPU kept for the node's free GPUs";
    case Reject::kMemory: return "insufficient memory";
    case Reject::kMemoryKeptForGpus: return "memory kept for the node's free GPUs";
    case Reject::kCount: break;
  }
  return "unknown";
}

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

std::vector<std::string> NodeModels(const topology::ClusterView& view) {
  // Nodes rarely mix models and clusters hold few, so comparing with the
  // last one seen skips nearly every set lookup.
  std::set<std::string> models;
  const std::string* last = nullptr;
  for (const auto& node : view.nodes) {
    for (const auto& gpu : node.gpus) {
      if (last != nullptr && *last == gpu.model) continue;
      models.insert(gpu.model);
      last = &gpu.model;
    }
  }
  return {models.begin(), models.end()};
}

bool Tolerates(const std::vector<std::string>& tolerations, const std::string& key, const std::string& value) {
  for (const auto& toleration : tolerations) {
    const auto eq = toleration.find('=');
    if (eq == std::string::npos) {
      if (toleration == key) return true;
    } else if (toleration.compare(0, eq, key) == 0 && eq == key.size() && toleration.compare(eq + 1, std::string::npos, value) == 0) {
      return true;
    }
  }
  return false;
}

bool Listed(const std::vector<std::string>& list, const std::string& uuid) {
  return std::find(list.begin(), list.end(), uuid) != list.end();
}

bool UuidAllowed(const topology::PendingJob& job, const std::string& uuid) {
  if (!job.gpu_uuid_allow.empty() && !Listed(job.gpu_uuid_allow, uuid)) return false;
  return !Listed(job.gpu_uuid_deny, uuid);
}

// A device some sharing tenant, MIG layout or core holds: its load must be tracked.
bool HasSharingState(const topology::GpuSlot& gpu) {
  return gpu.tenants > 0 || !gpu.mig_mode.empty() || gpu.cores > 0;
}

Reject RejectOf(topology::Misfit misfit) {
  switch (misfit) {
    case topology::Misfit::kMemory:
    case topology::Misfit::kCompute:
    case topology::Misfit::kTenants:
    case topology::Misfit::kUnknownMemory: return Reject::kShareRoom;
    case topology::Misfit::kQos: return Reject::kShareQos;
    case topology::Misfit::kProfile: return Reject::kMigFit;
    case topology::Misfit::kNoMigTable: return Reject::kMigUnsupported;
    default: return Reject::kShareMode;
  }
}

}  // namespace

Session::Session(const topology::ClusterView& view, const SchedulerConfig& config)
    : config_(config), queues_(view.queues, NodeModels(view)) {
  pools_ = {"public", "pooled", "exclusive"};
  Amounts totals(queues_.resource_count(), 0);
  nodes_.reserve(view.nodes.size());
  std::unordered_map<std::string_view, size_t> node_index;
  for (const auto& node_view : view.nodes) {
    WorkNode node;
    node.view = &node_view;
    node.pool = PoolIndex(node_view.pool);
    node.cpu_free = node_view.cpu_milli_free;
    node.memory_free = node_view.memory_mib_free;
    node.gpu_free.reserve(node_view.gpus.size());
    for (const auto& gpu : node_view.gpus) {
      const bool free = gpu.healthy && !gpu.allocated &&
                        (!HasSharingState(gpu) || topology::WholeFree(gpu, topology::DeviceLoad::Of(gpu)));
      node.gpu_free.push_back(free);
      // Static MIG devices never run whole-GPU work.
      if (gpu.healthy && !topology::MigOnly(gpu)) ++node.usable_gpus;
      if (gpu.healthy) ++node.healthy_gpus;
      if (free) ++node.free_gpus;
    }
    node.uniform_model = std::all_of(node_view.gpus.begin(), node_view.gpus.end(), [&](const topology::GpuSlot& gpu) {
      return gpu.model == node_view.gpus.front().model;
    });
    if (!node_view.gpus.empty()) {
      node.gpu_model = node_view.gpus.front().model;
      node.family = FamilyOf(node_view.gpus.front().vendor, node.gpu_model);
    }
    if (nodes_.empty() || nodes_.back().gpu_model != node.gpu_model) {
      node.model_index = queues_.ModelIndex(node.gpu_model);
    } else {
      node.model_index = nodes_.back().model_index;
    }
    largest_gpus_ = std::max(largest_gpus_, node.usable_gpus);
    largest_cpu_ = std::max(largest_cpu_, node_view.cpu_milli_total);
    largest_memory_ = std::max(largest_memory_, node_view.memory_mib_total);
    if (node_view.ready) {
      totals[kGpu] += node.usable_gpus;
      totals[kCpu] += node_view.cpu_milli_total;
      totals[kMemory] += node_view.memory_mib_total;
    }
    node_index.emplace(node_view.name, nodes_.size());
    nodes_.push_back(std::move(node));
  }
  queues_.SetClusterTotals(totals);

  buckets_.assign(pools_.size(), std::vector<std::vector<uint32_t>>(largest_gpus_ + 1));
  position_.assign(nodes_.size(), 0);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].view->ready && !nodes_[i].view->cordoned) BucketInsert(i);
  }

  running_.reserve(view.running.size());
  for (const auto& task : view.running) {
    WorkTask work;
    work.view = &task;
    work.queue = queues_.Resolve(task.queue);
    auto it = node_index.find(task.node);
    work.node = it == node_index.end() ? -1 : static_cast<int>(it->second);
    work.evicted = task.stopping;
    work.charge = queues_.Demand(task.gpus, task.cpu_milli, task.memory_mib, task.gpu_model, task.gpu_memory_mib);
    queues_.Charge(work.queue, work.charge);
    if (work.node >= 0) {
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
    job.pool = PoolIndex(job_view.pool);
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
      auto it = node_index.find(name);
      if (it != node_index.end()) nodes_[it->second].claimed_for = job.view->id.value();
    }
    job.has_claim = job.victims_draining || !job.view->claimed_nodes.empty();
  }
  if (FragmentationAware()) {
    workload_ = view.workload.empty() ? ObservedWorkload(view) : view.workload;
    workload_ = config_.node_order.strategy == Strategy::kFgd ? CommonestShapes(workload_, kFgdCoverage)
                                                              : CommonestShapes(workload_, 1.0, kMaxScoredShapes);
    if (config_.node_order.strategy == Strategy::kFragmentation) {  // fgd's measure has no host part
      ClusterFree free;
      for (const auto& node : nodes_) {
        free.cpu_milli += static_cast<double>(node.cpu_free);
        free.memory_mib += static_cast<double>(node.memory_free);
        for (uint32_t milli : scheduler::FreeOf(*node.view).gpu_milli) free.gpu_milli += milli;
      }
      cpu_only_claim_ = CpuOnlyClaimOf(workload_, free);
    }
  }
}

// Without a workload given, the tasks running and waiting now are the best
// guess of what will come. Shares count in thousandths of the GPU they run
// on (waiting ones: of the cluster's commonest GPU).
std::vector<topology::WorkloadShape> Session::ObservedWorkload(const topology::ClusterView& view) const {
  std::map<uint64_t, size_t> sizes;
  std::unordered_map<std::string, const topology::NodeView*> by_name;
  for (const auto& node : view.nodes) {
    by_name.emplace(node.name, &node);
    for (const auto& gpu : node.gpus) ++sizes[gpu.memory_mib];
  }
  topology::GpuSlot common;
  size_t most = 0;
  for (const auto& [memory, count] : sizes) {
    if (count > most) std::tie(common.memory_mib, most) = std::tie(memory, count);
  }
  std::vector<topology::WorkloadShape> samples;
  samples.reserve(view.running.size() + view.pending.size());
  for (const auto& task : view.running) {
    topology::WorkloadShape shape{task.gpus, 1000, task.cpu_milli, "", 0, task.memory_mib};
    auto node = by_name.find(task.node);
    if (task.gpus > 0 && node != by_name.end() && !node->second->gpus.empty()) {
      const uint64_t device = node->second->gpus.front().memory_mib;
      const uint64_t each = task.gpu_memory_mib / task.gpus;
      if (device > 0 && each < device) shape.gpu_milli = static_cast<uint32_t>((each * 1000 + device - 1) / device);
    }
    samples.push_back(std::move(shape));
  }
  for (const auto& job : view.pending) {
    for (const auto& task : job.tasks) {
      const Resources& need = task.resources;
      samples.push_back(
          {need.gpus, need.gpus > 0 ? ShareMilli(need, common) : 1000, need.cpu_milli, need.gpu_model, 0, need.memory_mib});
    }
  }
  return TargetWorkload(samples);
}

int Session::PoolIndex(const std::string& pool) const {
  for (size_t i = 0; i < pools_.size(); ++i) {
    if (pools_[i] == pool) return static_cast<int>(i);
  }
  return 0;
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

std::optional<Reject> Session::CheckStatic(const WorkJob& job, const PendingTask& task, const WorkNode& node) const {
  const topology::PendingJob& spec = *job.view;
  if (!node.view->ready) return Reject::kNotReady;
  if (node.view->cordoned) return Reject::kCordoned;
  if (node.pool != job.pool) return Reject::kPool;
  for (const auto& [key, value] : spec.node_selector) {
    auto it = node.view->labels.find(key);
    if (it == node.view->labels.end() || it->second != value) return Reject::kSelector;
  }
  for (const auto& [key, value] : node.view->taints) {
    if (!Tolerates(spec.tolerations, key, value)) return Reject::kTaint;
  }
  if (!task.resources.gpu_model.empty() && task.resources.gpus > 0) {
    // Nodes of one model (the norm) answer without walking their GPUs: this
    // check runs for every candidate node of every eviction search.
    uint32_t matching = 0;
    if (node.uniform_model) {
      matching = GpuModelAllowed(task.resources.gpu_model, node.gpu_model) ? node.healthy_gpus : 0;
    } else {
      for (const auto& gpu : node.view->gpus) {
        matching += gpu.healthy && GpuModelAllowed(task.resources.gpu_model, gpu.model);
      }
    }
    if (matching < task.resources.gpus) return Reject::kGpuModel;
  }
  if (node.pool == 2 && task.resources.gpus != node.usable_gpus) return Reject::kExclusiveWhole;
  if (task.resources.gpus > node.usable_gpus &&
      (task.resources.Whole() || task.resources.gpus > node.healthy_gpus)) {
    return Reject::kGpus;
  }
  if (task.resources.cpu_milli > node.view->cpu_milli_total) return Reject::kCpu;
  if (task.resources.memory_mib > node.view->memory_mib_total) return Reject::kMemory;
  return std::nullopt;
}

std::optional<Reject> Session::Check(const WorkJob& job, const PendingTask& task, const WorkNode& node,
                                     bool ignore_reservations) const {
  if (auto reject = CheckStatic(job, task, node)) return reject;
  const uint64_t id = job.view->id.value();
  if (node.claimed_for != 0 && node.claimed_for != id) return Reject::kClaimed;
  if (node.reserved_for != 0 && node.reserved_for != id && !ignore_reservations) return Reject::kReserved;
  const Resources& need = task.resources;
  if (node.pool == 2 && !node.Idle()) return Reject::kExclusiveBusy;
  uint64_t gpu_memory = 0;
  if (auto reject = CheckDevices(job, task, node, &gpu_memory)) return reject;
  if (need.gpus > 0 && queues_.Capped(kGpuMemory)) {
    for (int at = job.queue; at >= 0; at = queues_.queue(at).parent) {
      const QueueNode& queue = queues_.queue(at);
      if (queue.capability[kGpuMemory] != kUnlimited &&
          queue.used[kGpuMemory] + gpu_memory > queue.capability[kGpuMemory]) {
        return Reject::kGpuMemoryCapability;
      }
    }
  }
  if (need.gpus > 0) {
    // No allocation per node: the demand has this one resource only.
    // An any-of request is charged to the model of the node it lands on.
    const bool any_of = need.gpu_model.empty() || need.gpu_model.find('|') != std::string::npos;
    if (auto model = any_of ? node.model_index : queues_.ModelIndex(need.gpu_model)) {
      for (int at = job.queue; at >= 0; at = queues_.queue(at).parent) {
        const QueueNode& queue = queues_.queue(at);
        if (queue.capability[*model] != kUnlimited && queue.used[*model] + need.gpus > queue.capability[*model]) {
          return Reject::kModelCapability;
        }
      }
    }
  }
  if (node.cpu_free < need.cpu_milli) return Reject::kCpu;
  // CPU-only work must leave every free GPU its share of CPU and memory, or
  // GPU jobs would find GPUs they cannot use.
  const bool cpu_only_on_gpu_node = need.gpus == 0 && node.free_gpus > 0;
  if (cpu_only_on_gpu_node &&
      node.cpu_free < need.cpu_milli + node.free_gpus * config_.gpu_cpu_ratio.cpu_milli_per_free_gpu) {
    return Reject::kCpuKeptForGpus;
  }
  if (node.memory_free < need.memory_mib) return Reject::kMemory;
  if (cpu_only_on_gpu_node &&
      node.memory_free < need.memory_mib + node.free_gpus * config_.gpu_cpu_ratio.memory_mib_per_free_gpu) {
    return Reject::kMemoryKeptForGpus;
  }
  if (job.view->numa_policy == topology::NumaPolicy::kSingleNumaNode && !node.view->numa.empty() &&
      !ChooseNuma(job, task, node, PlannedDevices(job, task, node))) {
    return Reject::kNuma;
  }
  return std::nullopt;
}

std::vector<size_t> Session::PlannedDevices(const WorkJob& job, const PendingTask& task, const WorkNode& node) const {
  const Resources& need = task.resources;
  if (node.family != DeviceFamily::kGeneric && !need.Mig() && (need.gpus > 0 || need.cores > 0)) {
    auto pick = PickByVendorRule(job, task, node);
    return pick ? pick->slots : std::vector<size_t>{};
  }
  if (need.gpus == 0) return {};
  if (!need.Whole()) return PickShared(*node.view, Loads(node), ShareMask(job, task, node), need, job.view->numa_policy).slots;
  const bool filtered = !need.gpu_model.empty() || uuid_lists_ || NumaFilters(job, node);
  auto picked = PickGpus(*node.view, filtered ? DeviceMask(job, task, node) : node.gpu_free,
                         GpuRequest{need.gpus, need.gpu_model, job.view->numa_policy});
  return picked.value_or(std::vector<size_t>{});
}

std::optional<int32_t> Session::ChooseNuma(const WorkJob& job, const PendingTask& task, const WorkNode& node,
                                           const std::vector<size_t>& gpu_slots) const {
  const auto policy = job.view->numa_policy;
  if (policy == topology::NumaPolicy::kNone || node.view->numa.empty()) return -1;
  const auto& numa = node.numa.empty() ? node.view->numa : node.numa;
  const Resources& need = task.resources;
  auto fits = [&](const topology::NumaSlot& slot) {
    return slot.cpu_milli_free >= need.cpu_milli && slot.memory_mib_free >= need.memory_mib;
  };
  const bool single = policy == topology::NumaPolicy::kSingleNumaNode;
  if (!gpu_slots.empty()) {
    const int32_t id = node.view->gpus[gpu_slots.front()].numa;
    const bool together = std::all_of(gpu_slots.begin(), gpu_slots.end(),
                                      [&](size_t g) { return node.view->gpus[g].numa == id; });
    for (const auto& slot : numa) {
      if (together && slot.id == id && fits(slot)) return id;
    }
    return single ? std::nullopt : std::optional<int32_t>(-1);
  }
  if (need.gpus > 0 || need.cores > 0) return single ? std::nullopt : std::optional<int32_t>(-1);  // no devices fit
  const topology::NumaSlot* best = nullptr;
  for (const auto& slot : numa) {
    if (fits(slot) && (best == nullptr || slot.cpu_milli_free < best->cpu_milli_free)) best = &slot;
  }
  if (best != nullptr) return best->id;
  return single ? std::nullopt : std::optional<int32_t>(-1);
}

std::vector<bool> Session::DeviceMask(const WorkJob& job, const PendingTask& task, const WorkNode& node) const {
  const Resources& need = task.resources;
  const bool whole = need.Whole();
  std::vector<bool> mask(node.gpu_free.size(), false);
  const std::vector<topology::DeviceLoad>* loads = whole ? nullptr : &Loads(node);
  for (size_t g = 0; g < mask.size(); ++g) {
    const auto& gpu = node.view->gpus[g];
    // Not whole-free and no tenants: a task took it whole (this cycle or before).
    const bool held_whole = loads != nullptr && !node.gpu_free[g] && !topology::HasTenants(gpu, (*loads)[g]);
    mask[g] = (whole ? node.gpu_free[g] : gpu.healthy && !held_whole) &&
              GpuModelAllowed(need.gpu_model, gpu.model) && UuidAllowed(*job.view, gpu.uuid);
  }
  if (NumaFilters(job, node)) {
    // Devices whose NUMA node has no room for the task's CPU and memory are
    // out under single-numa-node, and a last resort under best-effort.
    const auto& numa = node.numa.empty() ? node.view->numa : node.numa;
    auto room = [&](int32_t id) {
      for (const auto& slot : numa) {
        if (slot.id == id) return slot.cpu_milli_free >= need.cpu_milli && slot.memory_mib_free >= need.memory_mib;
      }
      return false;
    };
    std::vector<bool> roomy = mask;
    uint32_t left = 0;
    for (size_t g = 0; g < roomy.size(); ++g) {
      roomy[g] = roomy[g] && room(node.view->gpus[g].numa);
      left += roomy[g];
    }
    if (job.view->numa_policy == topology::NumaPolicy::kSingleNumaNode || left >= std::max<uint32_t>(1, need.gpus)) {
      return roomy;
    }
  }
  return mask;
}

bool Session::NumaFilters(const WorkJob& job, const WorkNode& node) const {
  return job.view->numa_policy != topology::NumaPolicy::kNone && !node.view->numa.empty();
}

const std::vector<topology::DeviceLoad>& Session::Loads(const WorkNode& node) const {
  if (!node.loads.empty()) return node.loads;
  scratch_loads_.clear();
  for (const auto& gpu : node.view->gpus) scratch_loads_.push_back(topology::DeviceLoad::Of(gpu));
  return scratch_loads_;
}

// GPU checks: enough free devices (of the model, allowed by the job's UUID
// lists, on one NUMA node when it must be) for whole GPUs, or devices with
// room for the shares or MIG instance. Sets *gpu_memory to the device memory
// the task would hold here.
std::optional<Reject> Session::CheckDevices(const WorkJob& job, const PendingTask& task, const WorkNode& node,
                                            uint64_t* gpu_memory) const {
  const Resources& need = task.resources;
  if (need.gpus == 0 && need.cores == 0) return std::nullopt;
  if (need.cores > 0 && node.family != DeviceFamily::kNeuron && node.family != DeviceFamily::kNeuronRing) {
    return Reject::kVendorRule;
  }
  if (node.family != DeviceFamily::kGeneric && !need.Mig()) {
    auto pick = PickByVendorRule(job, task, node);
    if (!pick) return Reject::kVendorRule;
    for (size_t g : pick->slots) {
      const uint64_t each = pick->memory_mib_each > 0 ? pick->memory_mib_each : node.view->gpus[g].memory_mib;
      *gpu_memory += each;
    }
    return std::nullopt;
  }
  if (!need.Whole()) {
    const auto mask = DeviceMask(job, task, node);
    const DevicePick pick = PickShared(*node.view, Loads(node), mask, need, job.view->numa_policy);
    if (!pick.Ok()) return pick.misfit == topology::Misfit::kNone ? Reject::kNuma : RejectOf(pick.misfit);
    *gpu_memory = pick.grant.gpu_memory_mib * need.gpus;
    return std::nullopt;
  }
  if (node.free_gpus < need.gpus) return Reject::kGpus;
  const bool filtered = !need.gpu_model.empty() || uuid_lists_ || NumaFilters(job, node);
  std::vector<bool> mask;
  if (filtered) {
    mask = DeviceMask(job, task, node);
    if (static_cast<uint32_t>(std::count(mask.begin(), mask.end(), true)) < need.gpus) {
      uint32_t of_model = 0;
      for (size_t g = 0; g < mask.size(); ++g) {
        of_model += node.gpu_free[g] && GpuModelAllowed(need.gpu_model, node.view->gpus[g].model);
      }
      return of_model >= need.gpus ? Reject::kGpuUuid : Reject::kGpus;
    }
  }
  const std::vector<bool>& free = filtered ? mask : node.gpu_free;
  if (job.view->numa_policy == topology::NumaPolicy::kSingleNumaNode &&
      !PickGpus(*node.view, free, GpuRequest{need.gpus, need.gpu_model, job.view->numa_policy})) {
    return Reject::kNuma;
  }
  if (queues_.Capped(kGpuMemory)) {
    for (size_t g = 0; g < free.size(); ++g) {
      if (free[g]) {
        *gpu_memory = node.view->gpus[g].memory_mib * need.gpus;
        break;
      }
    }
  }
  return std::nullopt;
}

std::optional<VendorPick> Session::PickByVendorRule(const WorkJob& job, const PendingTask& task,
                                                   const WorkNode& node) const {
  const Resources& need = task.resources;
  const auto mask = DeviceMask(job, task, node);
  const auto& loads = Loads(node);
  const std::string qos = topology::EffectiveQos(need);
  std::vector<VendorDevice> devices;
  for (size_t g = 0; g < node.view->gpus.size(); ++g) {
    const auto& gpu = node.view->gpus[g];
    if (!gpu.healthy) continue;
    VendorDevice device;
    device.slot = g;
    device.index = gpu.index;
    device.link_group = gpu.link_group;
    device.memory_mib = gpu.memory_mib;
    device.memory_used_mib = loads[g].memory_used_mib;
    device.compute_used_pct = loads[g].compute_used_pct;
    device.tenants = loads[g].tenants;
    device.cores = gpu.cores;
    device.cores_used = loads[g].cores_used;
    // A device the job may not use stays in the list (rings and blocks are
    // counted over all of them) but is never free for it.
    device.free = mask[g] && !gpu.allocated;
    // Sharing QoS is gpool's rule, not the vendor's: a device shared under
    // another QoS is not one this task may join.
    if (!need.Whole() && need.gpu_compute_pct < 100 && !loads[g].qos.empty() && loads[g].qos != qos) {
      device.free = false;
    }
    devices.push_back(std::move(device));
  }
  VendorRequest request;
  request.count = need.gpus;
  request.memory_mib = need.gpu_memory_mib;
  request.memory_pct = need.gpu_memory_pct;
  request.compute_pct = need.gpu_compute_pct;
  request.cores = need.cores;
  request.node_devices = static_cast<uint32_t>(node.view->gpus.size());
  std::string why;
  return PickVendorDevices(node.family, devices, request, &why);
}

std::string Session::ShapeKey(const WorkJob& job, const PendingTask& task, bool ignore_reservations) const {
  const topology::PendingJob& spec = *job.view;
  std::string key = spec.pool;
  const Resources& need = task.resources;
  key += '|' + std::to_string(need.gpus) + '|' + std::to_string(need.cpu_milli) + '|' +
         std::to_string(need.memory_mib) + '|' + need.gpu_model + '|' + std::to_string(job.queue) +
         (ignore_reservations ? "|i" : "|-");
  if (!need.Whole()) {
    key += "|s" + std::to_string(need.gpu_memory_mib) + '/' + std::to_string(need.gpu_memory_pct) + '/' +
           std::to_string(need.gpu_compute_pct) + '/' + need.sharing_qos + '/' + need.mig_profile + '/' +
           std::to_string(static_cast<int>(spec.numa_policy));
  }
  for (const auto& uuid : spec.gpu_uuid_allow) key += "|+" + uuid;
  for (const auto& uuid : spec.gpu_uuid_deny) key += "|-" + uuid;
  for (const auto& [k, v] : spec.node_selector) key += '|' + k + '=' + v;
  key += '#';
  for (const auto& t : spec.tolerations) key += '|' + t;
  return key;
}

std::vector<std::string> Session::ExplainTask(const WorkJob& job, const PendingTask& task,
                                              bool ignore_reservations) const {
  std::vector<std::string> reasons;
  if (nodes_.empty()) {
    reasons.push_back("no nodes registered");
    return reasons;
  }
  const Resources& need = task.resources;
  const std::string prefix = "task " + std::to_string(task.index) + " needs ";
  if (need.Whole() && need.gpus > largest_gpus_) {  // shares and MIG may use static-MIG GPUs too
    reasons.push_back(prefix + std::to_string(need.gpus) + " GPUs but the largest node has " +
                      std::to_string(largest_gpus_));
  }
  if (need.cpu_milli > largest_cpu_) {
    reasons.push_back(prefix + std::to_string(need.cpu_milli) + " milli-CPU but the largest node has " +
                      std::to_string(largest_cpu_));
  }
  if (need.memory_mib > largest_memory_) {
    reasons.push_back(prefix + std::to_string(need.memory_mib) + " MiB memory but the largest node has " +
                      std::to_string(largest_memory_));
  }
  uint32_t counts[static_cast<size_t>(Reject::kCount)] = {};
  for (const auto& node : nodes_) {
    if (auto reject = Check(job, task, node, ignore_reservations)) ++counts[static_cast<size_t>(*reject)];
  }
  for (size_t r = 0; r < static_cast<size_t>(Reject::kCount); ++r) {
    if (counts[r] == 0) continue;
    reasons.push_back(std::to_string(counts[r]) + (counts[r] == 1 ? " node: " : " nodes: ") +
                      std::string(RejectText(static_cast<Reject>(r))));
  }
  return reasons;
}

std::optional<size_t> Session::FindNode(const WorkJob& job, const PendingTask& task, bool ignore_reservations,
                                        std::vector<std::string>& reasons, const std::vector<bool>* allowed) {
  // Holders of claims or reservations see nodes nobody else may use, and a
  // narrowed search sees fewer, so their failures say nothing about the
  // shape in general.
  const bool holder = job.has_claim || HoldsReservation(job) || allowed != nullptr;
  std::string key;
  if (!holder) {
    key = ShapeKey(job, task, ignore_reservations);
    auto cached = failed_shapes_.find(key);
    if (cached != failed_shapes_.end() && cached->second.first == generation_) {
      reasons.insert(reasons.end(), cached->second.second.begin(), cached->second.second.end());
      return std::nullopt;
    }
  }
  std::vector<bool>* short_nodes = nullptr;
  if (!holder) {
    auto& entry = short_nodes_[key];
    if (entry.first != generation_ || entry.second.size() != nodes_.size()) entry = {generation_, std::vector<bool>(nodes_.size())};
    short_nodes = &entry.second;
  }
  const int pool = job.pool;
  // Shares and MIG instances fit on nodes without a whole free GPU too.
  const uint32_t need = task.resources.Whole() ? task.resources.gpus : 0;
  std::optional<size_t> best;
  NodeScore best_score;
  uint32_t found = 0;
  const uint32_t wanted = std::max<uint32_t>(1, config_.node_order.candidates);
  const auto& pool_buckets = buckets_[static_cast<size_t>(pool)];
  // Every strategy but spread looks at the fullest nodes first: with a
  // candidate limit, those are the ones worth scoring.
  const bool binpack = config_.node_order.strategy != Strategy::kSpread;
  const int top = static_cast<int>(largest_gpus_);
  for (int step = 0; step <= top && found < wanted; ++step) {
    const int b = binpack ? static_cast<int>(need) + step : top - step;
    if (b < static_cast<int>(need) || b > top) continue;
    for (uint32_t node_index : pool_buckets[static_cast<size_t>(b)]) {
      const WorkNode& node = nodes_[node_index];
      if (allowed != nullptr && !(*allowed)[node_index]) continue;
      if (short_nodes && (*short_nodes)[node_index]) continue;
      if (auto rj = Check(job, task, node, ignore_reservations)) {
        if (short_nodes && (*rj == Reject::kCpu || *rj == Reject::kMemory)) (*short_nodes)[node_index] = true;
        continue;
      }
      const NodeScore score = Score(job, task, node);
      if (!best || score > best_score || (score == best_score && node_index < *best)) {
        best = node_index;
        best_score = score;
      }
      if (++found >= wanted) break;
    }
  }
  if (best || allowed != nullptr) return best;
  auto explained = ExplainTask(job, task, ignore_reservations);
  reasons.insert(reasons.end(), explained.begin(), explained.end());
  if (!holder) failed_shapes_[key] = {generation_, std::move(explained)};
  return std::nullopt;
}

Placement Session::Place(WorkJob& job, const PendingTask& task, size_t node_index) {
  WorkNode& node = nodes_[node_index];
  const Resources& need = task.resources;
  const bool indexed = node.view->ready && !node.view->cordoned;
  if (indexed) BucketRemove(node_index);
  Placement placement{job.view->id, task.index, node.view->name, {}, need.cpu_milli, need.memory_mib, {}, 0};
  std::string model;
  if (node.family != DeviceFamily::kGeneric && !need.Mig() && (need.gpus > 0 || need.cores > 0)) {
    auto pick = PickByVendorRule(job, task, node);
    const bool whole = pick && pick->memory_mib_each == 0 && pick->share_pct == 0 && pick->cores.empty();
    if (pick && whole && !need.Whole()) {
      // The rule rounded the share up to whole devices (a Kunlun share above
      // half a device): it is still a share, of everything.
      pick->memory_mib_each = node.view->gpus[pick->slots.front()].memory_mib;
      pick->share_pct = 100;
    }
    const bool held_whole = whole && need.Whole();
    for (size_t g : pick ? pick->slots : std::vector<size_t>{}) {
      const auto& gpu = node.view->gpus[g];
      placement.gpu_indices.push_back(gpu.index);
      placement.gpu_memory_mib += held_whole ? gpu.memory_mib : pick->memory_mib_each;
      model = gpu.model;
      if (held_whole) {
        node.gpu_free[g] = false;
        --node.free_gpus;
      }
    }
    if (pick && !held_whole) {
      if (pick->cores.empty()) {
        placement.grant.shared = true;
        placement.grant.gpu_memory_mib = pick->memory_mib_each;
        placement.grant.gpu_compute_pct = std::max(pick->share_pct, need.gpu_compute_pct);
        placement.grant.sharing_qos = topology::EffectiveQos(need);
      } else {
        placement.grant.cores = pick->cores;
      }
      MarkDevices(node, placement, true);
    }
  } else if (need.Whole()) {
    const bool filtered = !need.gpu_model.empty() || uuid_lists_ || NumaFilters(job, node);
    const std::vector<bool> free = filtered ? DeviceMask(job, task, node) : node.gpu_free;
    auto picked = PickGpus(*node.view, free, GpuRequest{need.gpus, need.gpu_model, job.view->numa_policy});
    for (size_t g : picked.value_or(std::vector<size_t>{})) {
      const auto& gpu = node.view->gpus[g];
      node.gpu_free[g] = false;
      --node.free_gpus;
      placement.gpu_indices.push_back(gpu.index);
      placement.gpu_memory_mib += gpu.memory_mib;
      model = gpu.model;
    }
  } else if (need.gpus > 0) {
    const DevicePick pick = PickShared(*node.view, Loads(node), ShareMask(job, task, node), need,
                                       job.view->numa_policy);
    placement.grant = pick.grant;
    for (size_t g : pick.slots) {
      placement.gpu_indices.push_back(node.view->gpus[g].index);
      placement.gpu_memory_mib += pick.grant.gpu_memory_mib;
      model = node.view->gpus[g].model;
    }
    MarkDevices(node, placement, true);
  }
  node.cpu_free -= need.cpu_milli;
  node.memory_free -= need.memory_mib;
  if (job.view->numa_policy != topology::NumaPolicy::kNone && !node.view->numa.empty()) {
    std::vector<size_t> slots;
    for (uint32_t index : placement.gpu_indices) {
      for (size_t g = 0; g < node.view->gpus.size(); ++g) {
        if (node.view->gpus[g].index == index) slots.push_back(g);
      }
    }
    placement.numa_node = ChooseNuma(job, task, node, slots).value_or(-1);
    if (placement.numa_node >= 0) {
      if (node.numa.empty()) node.numa = node.view->numa;
      for (auto& slot : node.numa) {
        if (slot.id != placement.numa_node) continue;
        slot.cpu_milli_free -= std::min(slot.cpu_milli_free, need.cpu_milli);
        slot.memory_mib_free -= std::min(slot.memory_mib_free, need.memory_mib);
      }
    }
  }
  if (indexed) BucketInsert(node_index);
  queues_.Charge(job.queue, queues_.Demand(static_cast<uint32_t>(placement.gpu_indices.size()), need.cpu_milli,
                                           need.memory_mib, model, placement.gpu_memory_mib));
  const uint32_t group = job.view->groups.empty() ? 0 : task.group;
  if (group < job.active.size()) ++job.active[group];
  return placement;
}

void Session::Unplace(WorkJob& job, const PendingTask& task, size_t node_index, const Placement& placement) {
  WorkNode& node = nodes_[node_index];
  const bool indexed = node.view->ready && !node.view->cordoned;
  if (indexed) BucketRemove(node_index);
  std::string model;
  if (placement.grant.Empty()) {
    for (uint32_t index : placement.gpu_indices) {
      for (size_t g = 0; g < node.view->gpus.size(); ++g) {
        if (node.view->gpus[g].index == index) {
          node.gpu_free[g] = true;
          ++node.free_gpus;
          model = node.view->gpus[g].model;
        }
      }
    }
  } else {
    for (uint32_t index : placement.gpu_indices) {
      for (const auto& gpu : node.view->gpus) {
        if (gpu.index == index) model = gpu.model;
      }
    }
    MarkDevices(node, placement, false);
  }
  node.cpu_free += placement.cpu_milli;
  if (placement.numa_node >= 0 && !node.numa.empty()) {
    for (auto& slot : node.numa) {
      if (slot.id != placement.numa_node) continue;
      slot.cpu_milli_free += placement.cpu_milli;
      slot.memory_mib_free += placement.memory_mib;
    }
  }
  node.memory_free += placement.memory_mib;
  if (indexed) BucketInsert(node_index);
  queues_.Refund(job.queue, queues_.Demand(static_cast<uint32_t>(placement.gpu_indices.size()), placement.cpu_milli,
                                           placement.memory_mib, model, placement.gpu_memory_mib));
  const uint32_t group = job.view->groups.empty() ? 0 : task.group;
  if (group < job.active.size() && job.active[group] > 0) --job.active[group];
  NewGeneration();
}

// Adds (or takes back) a placement's shares or MIG instance to the node's
// device loads, and keeps the node's whole-free GPUs in step.
void Session::MarkDevices(WorkNode& node, const Placement& placement, bool add) {
  if (node.loads.empty()) node.loads = Loads(node);
  for (uint32_t index : placement.gpu_indices) {
    for (size_t g = 0; g < node.view->gpus.size(); ++g) {
      const auto& gpu = node.view->gpus[g];
      if (gpu.index != index) continue;
      auto& load = node.loads[g];
      const auto& grant = placement.grant;
      if (!grant.cores.empty()) {
        const uint32_t first = gpu.index * gpu.cores;
        for (uint32_t core : grant.cores) {
          if (gpu.cores > 0 && core >= first && core < first + gpu.cores) load.cores_used[core - first] = add;
        }
        if (add) {
          ++load.tenants;
        } else if (load.tenants > 0) {
          --load.tenants;
        }
      } else if (!grant.mig_profile.empty()) {
        const topology::MigSlot instance{grant.mig_profile, grant.mig_start, true};
        if (add) {
          topology::AddMig(load, instance);
        } else {
          topology::RemoveMig(load, instance, gpu.mig_mode == "dynamic");
        }
      } else if (add) {
        topology::AddShare(load, grant.gpu_memory_mib, grant.gpu_compute_pct, grant.sharing_qos);
      } else {
        topology::RemoveShare(load, grant.gpu_memory_mib, grant.gpu_compute_pct);
      }
      const bool free = topology::WholeFree(gpu, load);
      if (free != node.gpu_free[g]) {
        node.gpu_free[g] = free;
        if (free) {
          ++node.free_gpus;
        } else {
          --node.free_gpus;
        }
      }
    }
  }
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
  reservation_holders_.insert(job.view->id.value());
}

void Session::Evict(size_t running_index, const WorkJob& for_job, const std::string& reason) {
  // (The claim on the victim's node is what keeps the freed capacity for
  // for_job; the state machine persists it on the job until it is placed.)
  WorkTask& task = running_[running_index];
  task.evicted = true;
  queues_.Refund(task.queue, task.charge);
  if (task.node >= 0) nodes_[static_cast<size_t>(task.node)].claimed_for = for_job.view->id.value();
  plan_.evictions.push_back(Eviction{task.view->job, task.view->task_index, for_job.view->id, reason});
}

}  // namespace gpool::scheduler
