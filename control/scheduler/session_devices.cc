// Session's device assignment: which devices a task gets on a node (whole
// GPUs through gpu_picker, shares and MIG instances through device_pick,
// vendor devices through vendor_rules) and on which NUMA node, and Place and
// Unplace, which apply a placement to the working copy and take it back,
// keeping each node's free GPUs and device loads in step.
#include "control/scheduler/session.h"

#include <algorithm>

#include "control/scheduler/device_pick.h"
#include "control/scheduler/exclusive_cores.h"
#include "control/scheduler/gpu_picker.h"

namespace gpool::scheduler {

using topology::PendingTask;

namespace {

bool Listed(const std::vector<std::string>& list, const std::string& uuid) {
  return std::find(list.begin(), list.end(), uuid) != list.end();
}

bool UuidAllowed(const topology::PendingJob& job, const std::string& uuid) {
  if (!job.gpu_uuid_allow.empty() && !Listed(job.gpu_uuid_allow, uuid)) return false;
  return !Listed(job.gpu_uuid_deny, uuid);
}

}  // namespace

std::vector<size_t> Session::PlannedDevices(const WorkJob& job, const PendingTask& task, const WorkNode& node) const {
  const Resources& need = task.resources;
  if (node.family != DeviceFamily::kGeneric && !need.Mig() && (need.gpus > 0 || need.cores > 0)) {
    auto pick = PickByVendorRule(job, task, node);
    return pick ? pick->slots : std::vector<size_t>{};
  }
  if (need.gpus == 0) return {};
  if (!need.Whole()) {
    return PickShared(*node.view, Loads(node), ShareMask(job, task, node), need, job.view->numa_policy,
                      job.view->gpu_policy)
        .slots;
  }
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
  // Exclusive cores come from the NUMA node too (exclusive_cores.h).
  const size_t cores = ExclusiveCoresWanted(need);
  auto fits = [&](const topology::NumaSlot& slot) {
    return slot.cpu_milli_free >= need.cpu_milli && slot.memory_mib_free >= need.memory_mib &&
           slot.cpu_ids_free.size() >= cores;
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

DeviceBits Session::DeviceMask(const WorkJob& job, const PendingTask& task, const WorkNode& node) const {
  const Resources& need = task.resources;
  const bool whole = need.Whole();
  DeviceBits mask(node.gpu_free.size(), false);
  const std::vector<topology::DeviceLoad>* loads = whole ? nullptr : &Loads(node);
  for (size_t g = 0; g < mask.size(); ++g) {
    const auto& gpu = node.view->gpus[g];
    // Not whole-free and no tenants: a task took it whole (this cycle or before).
    const bool held_whole = loads != nullptr && !node.gpu_free[g] && !topology::HasTenants(gpu, (*loads)[g]);
    // Time-sliced GPUs take replicas only (time_slices.cc), never a share.
    mask.Set(g, (whole ? node.gpu_free[g] : gpu.healthy && !held_whole && !gpu.TimeSliced()) &&
                    GpuModelAllowed(need.gpu_model, gpu.model) && UuidAllowed(*job.view, gpu.uuid));
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
    DeviceBits roomy = mask;
    uint32_t left = 0;
    for (size_t g = 0; g < roomy.size(); ++g) {
      roomy.Set(g, roomy[g] && room(node.view->gpus[g].numa));
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
  request.gpu_policy = job.view->gpu_policy;
  std::string why;
  return PickVendorDevices(node.family, devices, request, &why);
}

Placement Session::Place(WorkJob& job, const PendingTask& task, size_t node_index) {
  WorkNode& node = nodes_[node_index];
  ++node.version;
  if (node.owner >= 0 && !job.borrowing) node.owner_busy = true;
  const Resources& need = task.resources;
  const bool indexed = node.ready && !node.cordoned;
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
        node.gpu_free.Set(g, false);
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
  } else if (std::vector<size_t> slices = need.Whole() && node.sliced_gpus >= need.gpus && MayTimeSlice(job, task)
                                              ? PickTimeSlices(job, task, node)
                                              : std::vector<size_t>{};
             !slices.empty()) {
    // Replicas first: whole GPUs stay for work that is guaranteed them.
    placement.grant.time_slice = true;
    for (size_t g : slices) {
      placement.gpu_indices.push_back(node.view->gpus[g].index);
      model = node.view->gpus[g].model;
    }
    MarkDevices(node, placement, true);
  } else if (need.Whole()) {
    const bool filtered = !need.gpu_model.empty() || uuid_lists_ || NumaFilters(job, node);
    // The node's own free devices unless something filters them: no copy
    // per placement (the pick is made before any of them is taken).
    const DeviceBits mask = filtered ? DeviceMask(job, task, node) : DeviceBits();
    const auto picked = PickGpus(*node.view, filtered ? mask : node.gpu_free,
                                 GpuRequest{need.gpus, need.gpu_model, job.view->numa_policy});
    if (picked) {
      placement.gpu_indices.reserve(picked->size());
      for (size_t g : *picked) {
        const auto& gpu = node.view->gpus[g];
        node.gpu_free.Set(g, false);
        --node.free_gpus;
        placement.gpu_indices.push_back(gpu.index);
        placement.gpu_memory_mib += gpu.memory_mib;
        model = gpu.model;
      }
    }
  } else if (need.gpus > 0) {
    const DevicePick pick = PickShared(*node.view, Loads(node), ShareMask(job, task, node), need,
                                       job.view->numa_policy, job.view->gpu_policy);
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
  if (const uint32_t count = ExclusiveCoresWanted(need); count > 0) {
    // The check chain found them (ExclusiveCoresFree), on the NUMA node just chosen.
    if (node.numa.empty()) node.numa = node.view->numa;
    const bool single = job.view->numa_policy == topology::NumaPolicy::kSingleNumaNode;
    placement.cpu_ids = PickExclusiveCpus(node.numa, placement.numa_node, single, count).value_or(
        std::vector<uint32_t>{});
    MarkExclusiveCpus(node.numa, placement.cpu_ids, false, node.view->numa);
  }
  if (indexed) BucketInsert(node_index);
  // Replicas are oversubscription, not capacity: they count against no GPU quota.
  const auto charged_gpus = placement.grant.time_slice ? 0u : static_cast<uint32_t>(placement.gpu_indices.size());
  Amounts& charge = DemandScratch();
  queues_.AddDemand(charge, charged_gpus, need.cpu_milli, need.memory_mib, model, placement.gpu_memory_mib);
  queues_.Charge(job.queue, charge);
  const uint32_t group = job.view->groups.empty() ? 0 : task.group;
  if (group < job.active.size()) ++job.active[group];
  return placement;
}

void Session::Unplace(WorkJob& job, const PendingTask& task, size_t node_index, const Placement& placement) {
  WorkNode& node = nodes_[node_index];
  ++node.version;
  const bool indexed = node.ready && !node.cordoned;
  if (indexed) BucketRemove(node_index);
  std::string model;
  if (placement.grant.Empty()) {
    for (uint32_t index : placement.gpu_indices) {
      for (size_t g = 0; g < node.view->gpus.size(); ++g) {
        if (node.view->gpus[g].index == index) {
          node.gpu_free.Set(g, true);
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
  if (!placement.cpu_ids.empty() && !node.numa.empty()) {
    MarkExclusiveCpus(node.numa, placement.cpu_ids, true, node.view->numa);
  }
  node.memory_free += placement.memory_mib;
  if (indexed) BucketInsert(node_index);
  const auto refunded_gpus = placement.grant.time_slice ? 0u : static_cast<uint32_t>(placement.gpu_indices.size());
  Amounts& refund = DemandScratch();
  queues_.AddDemand(refund, refunded_gpus, placement.cpu_milli, placement.memory_mib, model,
                    placement.gpu_memory_mib);
  queues_.Refund(job.queue, refund);
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
      topology::ApplyGrant(load, gpu, placement.grant, add);
      const bool free = topology::WholeFree(gpu, load);
      if (free != node.gpu_free[g]) {
        node.gpu_free.Set(g, free);
        if (free) {
          ++node.free_gpus;
        } else {
          --node.free_gpus;
        }
      }
    }
  }
}

}  // namespace gpool::scheduler
