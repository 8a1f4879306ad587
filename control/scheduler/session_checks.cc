// Session's feasibility checks: can this node take this task now (Check), or
// ever (CheckStatic), and do its devices hold it (CheckDevices). The first
// check that fails is the reason the node is counted under when a task is
// explained, so the order of the checks is part of what users read.
#include "control/scheduler/session.h"

#include <algorithm>

#include "control/scheduler/device_pick.h"
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
  if (node.pool == NodePool::kExclusive && task.resources.gpus != node.usable_gpus) return Reject::kExclusiveWhole;
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
  if (node.pool == NodePool::kExclusive && !node.Idle()) return Reject::kExclusiveBusy;
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

}  // namespace gpool::scheduler
