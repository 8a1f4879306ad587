// Session's feasibility checks as two chains of named checks: can this node
// take this task now (Check), or ever (CheckStatic); CheckDevices is the
// devices' link of the chain. The first check that fails is the reason the
// node is counted under when a task is explained, so the order of the
// chains (NodeChecks::Static and NodeChecks::Now) is part of what users read.
#include "control/scheduler/session.h"

#include <algorithm>

#include "control/scheduler/device_pick.h"
#include "control/scheduler/exclusive_cores.h"
#include "control/scheduler/gpu_picker.h"

namespace gpool::scheduler {

using topology::PendingTask;

namespace {

bool Tolerates(const std::vector<std::string>& tolerations, const std::string& key, const std::string& value) {
  for (const auto& toleration : tolerations) {
    const auto eq = toleration.find('=');
    if (eq == std::string::npos) {
      if (toleration == key) return true;
    } else if (toleration.compare(0, eq, key) == 0 && eq == key.size() &&
               toleration.compare(eq + 1, std::string::npos, value) == 0) {
      return true;
    }
  }
  return false;
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

// What every check of one node for one task reads. DevicesFit leaves the
// device memory the task would hold here for the capability check after it.
struct NodeChecks {
  struct Input {
    const Session& session;
    const WorkJob& job;
    const PendingTask& task;
    const WorkNode& node;
    bool ignore_reservations = false;
    uint64_t gpu_memory = 0;
  };
  using Result = std::optional<Reject>;

  // A chain of checks run in order; the first failure is the rejection.
  // Each check is a template argument, so the chain compiles to the same
  // straight-line code as one function of inline ifs.
  template <Result (*... Checks)(Input&)>
  static Result Chain(Input& in) {
    Result reject;
    (void)(... || (reject = Checks(in)).has_value());
    return reject;
  }

  // Whether the node could ever run the task (nothing about free capacity).
  static Result Ready(Input& in) { return in.node.ready ? Result() : Reject::kNotReady; }
  static Result NotCordoned(Input& in) { return in.node.cordoned ? Reject::kCordoned : Result(); }
  // Its pool, and one its queue may use (a queue restricted to pools keeps
  // its jobs there, borrowed exclusive nodes included).
  static Result InJobPool(Input& in) {
    return in.node.pool != in.job.pool || !((in.job.queue_pools >> static_cast<unsigned>(in.node.pool)) & 1u)
               ? Reject::kPool
               : Result();
  }
  // An exclusive node that belongs to a queue takes only that queue's jobs
  // (and its descendants').
  static Result OwnedByJobQueue(Input& in) {
    const int owner = in.node.owner;
    // A borrower takes only nodes some other queue owns, while the owner has nothing there.
    if (in.job.borrowing) {
      return owner >= 0 && !in.session.queues_.InSubtree(in.job.queue, owner) && !in.node.owner_busy
                 ? Result()
                 : Reject::kPoolOwner;
    }
    if (owner == WorkNode::kNoOwner) return std::nullopt;
    return owner != WorkNode::kUnknownOwner && in.session.queues_.InSubtree(in.job.queue, owner) ? Result()
                                                                                                : Reject::kPoolOwner;
  }
  static Result SelectorMatches(Input& in) {
    for (const auto& [key, value] : in.job.view->node_selector) {
      auto it = in.node.view->labels.find(key);
      if (it == in.node.view->labels.end() || it->second != value) return Reject::kSelector;
    }
    return std::nullopt;
  }
  static Result TaintsTolerated(Input& in) {
    if (!in.node.tainted) return std::nullopt;
    for (const auto& [key, value] : in.node.view->taints) {
      if (!Tolerates(in.job.view->tolerations, key, value)) return Reject::kTaint;
    }
    return std::nullopt;
  }
  static Result HasGpuModel(Input& in) {
    const Resources& need = in.task.resources;
    if (need.gpu_model.empty() || need.gpus == 0) return std::nullopt;
    // Nodes of one model (the norm) answer without walking their GPUs: this
    // check runs for every candidate node of every eviction search.
    const WorkNode& node = in.node;
    uint32_t matching = 0;
    if (node.uniform_model) {
      matching = GpuModelAllowed(need.gpu_model, node.gpu_model) ? node.healthy_gpus : 0;
    } else {
      for (const auto& gpu : node.view->gpus) matching += gpu.healthy && GpuModelAllowed(need.gpu_model, gpu.model);
    }
    return matching < need.gpus ? Reject::kGpuModel : Result();
  }
  static Result ExclusiveTakesWhole(Input& in) {
    return in.node.pool == NodePool::kExclusive && !in.job.borrowing && in.task.resources.gpus != in.node.usable_gpus
               ? Reject::kExclusiveWhole
               : Result();
  }
  static Result GpusEver(Input& in) {
    const Resources& need = in.task.resources;
    if (in.node.sliced_gpus >= need.gpus && in.session.MayTimeSlice(in.job, in.task)) return std::nullopt;
    return need.gpus > in.node.usable_gpus && (need.Whole() || need.gpus > in.node.healthy_gpus) ? Reject::kGpus
                                                                                                  : Result();
  }
  static Result CpuEver(Input& in) {
    return in.task.resources.cpu_milli > in.node.cpu_total ? Reject::kCpu : Result();
  }
  static Result MemoryEver(Input& in) {
    return in.task.resources.memory_mib > in.node.memory_total ? Reject::kMemory : Result();
  }

  // Whether it can run the task now.
  static Result NotClaimed(Input& in) {
    const uint64_t id = in.job.view->id.value();
    return in.node.claimed_for != 0 && in.node.claimed_for != id ? Reject::kClaimed : Result();
  }
  static Result NotReserved(Input& in) {
    const uint64_t id = in.job.view->id.value();
    if (in.node.reserved_for == 0 || in.node.reserved_for == id || in.ignore_reservations) return Result();
    return in.session.EndsBeforeReservation(in.job, in.node.reserved_for) ? Result() : Reject::kReserved;
  }
  static Result ExclusiveIdle(Input& in) {
    return in.node.pool == NodePool::kExclusive && !in.job.borrowing && !in.node.Idle() ? Reject::kExclusiveBusy
                                                                                        : Result();
  }
  static Result DevicesFit(Input& in) { return in.session.CheckDevices(in.job, in.task, in.node, &in.gpu_memory); }
  // Per-node quota checks of a resource the gang's demand cannot know in
  // advance (the node decides the model and the device memory): capability
  // always, deserved when the job may not borrow.
  static Result NodeQuota(Input& in, size_t resource, uint64_t need, Reject over_capability, Reject over_deserved) {
    const QueueTree& queues = in.session.queues_;
    const bool deserved = in.job.within_deserved && queues.DeservedSet(resource);
    if (!queues.Capped(resource) && !deserved) return std::nullopt;
    for (int at = in.job.queue; at >= 0; at = queues.queue(at).parent) {
      const QueueNode& queue = queues.queue(at);
      if (queue.capability[resource] != kUnlimited && queue.used[resource] + need > queue.capability[resource]) {
        return over_capability;
      }
      if (deserved && queue.deserved[resource] != kUnlimited && queue.used[resource] + need > queue.deserved[resource]) {
        return over_deserved;
      }
    }
    return std::nullopt;
  }
  static Result GpuMemoryCapability(Input& in) {
    if (in.task.resources.gpus == 0) return std::nullopt;
    return NodeQuota(in, kGpuMemory, in.gpu_memory, Reject::kGpuMemoryCapability, Reject::kGpuMemoryDeserved);
  }
  static Result ModelCapability(Input& in) {
    const Resources& need = in.task.resources;
    if (need.gpus == 0) return std::nullopt;
    const QueueTree& queues = in.session.queues_;
    // No allocation per node: the demand has this one resource only.
    // An any-of request is charged to the model of the node it lands on.
    const bool any_of = need.gpu_model.empty() || need.gpu_model.find('|') != std::string::npos;
    auto model = any_of ? in.node.model_index : queues.ModelIndex(need.gpu_model);
    if (!model) return std::nullopt;
    return NodeQuota(in, *model, need.gpus, Reject::kModelCapability, Reject::kModelDeserved);
  }
  static Result CpuFree(Input& in) { return in.node.cpu_free < in.task.resources.cpu_milli ? Reject::kCpu : Result(); }
  // CPU-only work must leave every free GPU its share of CPU and memory, or
  // GPU jobs would find GPUs they cannot use.
  static bool CpuOnlyOnGpuNode(const Input& in) { return in.task.resources.gpus == 0 && in.node.free_gpus > 0; }
  static Result CpuKeptForGpus(Input& in) {
    const auto& ratio = in.session.config_.gpu_cpu_ratio;
    return CpuOnlyOnGpuNode(in) &&
                   in.node.cpu_free < in.task.resources.cpu_milli + in.node.free_gpus * ratio.cpu_milli_per_free_gpu
               ? Reject::kCpuKeptForGpus
               : Result();
  }
  static Result MemoryFree(Input& in) {
    return in.node.memory_free < in.task.resources.memory_mib ? Reject::kMemory : Result();
  }
  static Result MemoryKeptForGpus(Input& in) {
    const auto& ratio = in.session.config_.gpu_cpu_ratio;
    return CpuOnlyOnGpuNode(in) &&
                   in.node.memory_free < in.task.resources.memory_mib + in.node.free_gpus * ratio.memory_mib_per_free_gpu
               ? Reject::kMemoryKeptForGpus
               : Result();
  }
  static Result NumaFits(Input& in) {
    if (in.job.view->numa_policy != topology::NumaPolicy::kSingleNumaNode || in.node.view->numa.empty()) {
      return std::nullopt;
    }
    const Session& s = in.session;
    return s.ChooseNuma(in.job, in.task, in.node, s.PlannedDevices(in.job, in.task, in.node)) ? Result()
                                                                                              : Reject::kNuma;
  }

  // Whole cores for the task alone, from the NUMA node its policy puts it on.
  static Result ExclusiveCoresFree(Input& in) {
    const uint32_t count = ExclusiveCoresWanted(in.task.resources);
    if (count == 0) return std::nullopt;
    const Session& s = in.session;
    const auto& numa = in.node.numa.empty() ? in.node.view->numa : in.node.numa;
    int32_t numa_node = -1;
    if (in.job.view->numa_policy != topology::NumaPolicy::kNone && !numa.empty()) {
      numa_node = s.ChooseNuma(in.job, in.task, in.node, s.PlannedDevices(in.job, in.task, in.node)).value_or(-1);
    }
    const bool single = in.job.view->numa_policy == topology::NumaPolicy::kSingleNumaNode;
    return PickExclusiveCpus(numa, numa_node, single, count) ? Result() : Reject::kExclusiveCores;
  }

  // The chains, in the order a pending job's explanation reads: each node is
  // counted under the first check it fails, so the cheap, static reasons a
  // user can act on (pool, selector, taint, model) come before capacity.
  static Result Static(Input& in) {
    return Chain<Ready, NotCordoned, InJobPool, OwnedByJobQueue, SelectorMatches, TaintsTolerated, HasGpuModel,
                 ExclusiveTakesWhole, GpusEver, CpuEver, MemoryEver>(in);
  }
  static Result Now(Input& in) {
    return Chain<Static, NotClaimed, NotReserved, ExclusiveIdle, DevicesFit, GpuMemoryCapability, ModelCapability,
                 CpuFree, CpuKeptForGpus, MemoryFree, MemoryKeptForGpus, NumaFits, ExclusiveCoresFree>(in);
  }
};

std::optional<Reject> Session::CheckStatic(const WorkJob& job, const PendingTask& task, const WorkNode& node) const {
  NodeChecks::Input in{*this, job, task, node};
  return NodeChecks::Static(in);
}

std::optional<Reject> Session::Check(const WorkJob& job, const PendingTask& task, const WorkNode& node,
                                     bool ignore_reservations) const {
  NodeChecks::Input in{*this, job, task, node, ignore_reservations};
  return NodeChecks::Now(in);
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
  if (node.sliced_gpus >= need.gpus && MayTimeSlice(job, task) && !PickTimeSlices(job, task, node).empty()) {
    return std::nullopt;  // replicas, no device memory held (none is isolated)
  }
  if (node.free_gpus < need.gpus) return Reject::kGpus;
  bool filtered = !need.gpu_model.empty() || uuid_lists_ || NumaFilters(job, node);
  if (filtered && !uuid_lists_ && node.uniform_model && !NumaFilters(job, node)) {
    // Only the model filters, and the node has one: DeviceMask would be its
    // whole-free devices or none, so no mask is built per node checked.
    const auto free_count = static_cast<uint32_t>(node.gpu_free.Count());
    if (!GpuModelAllowed(need.gpu_model, node.gpu_model) || free_count < need.gpus) return Reject::kGpus;
    filtered = false;
  }
  DeviceBits mask;
  if (filtered) {
    mask = DeviceMask(job, task, node);
    if (static_cast<uint32_t>(mask.Count()) < need.gpus) {
      uint32_t of_model = 0;
      for (size_t g = 0; g < mask.size(); ++g) {
        of_model += node.gpu_free[g] && GpuModelAllowed(need.gpu_model, node.view->gpus[g].model);
      }
      return of_model >= need.gpus ? Reject::kGpuUuid : Reject::kGpus;
    }
  }
  const DeviceBits& free = filtered ? mask : node.gpu_free;
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

}  // namespace gpool::scheduler
