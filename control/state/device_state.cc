// ClusterState's device sharing: what a node's GPUs hold from tenants (GPU
// shares, MIG instances, cores), and the re-check of a plan's grants against
// it before they commit. The rules are topology/device_share.h, the same the
// scheduler placed by, so a plan built on an older view is refused rather
// than over-committing a device.
#include <algorithm>

#include "control/state/cluster_state.h"
#include "topology/device_share.h"
#include "topology/mig.h"

namespace gpool::state {

topology::GpuSlot ClusterState::GpuSlotOf(const NodeRecord& node, const GpuInfo& gpu) const {
  topology::GpuSlot slot{gpu.index, gpu.model, gpu.memory_mib, node.GpuUsable(gpu), false, gpu.numa, gpu.nvlink_peers};
  slot.vendor = gpu.vendor;
  slot.uuid = gpu.uuid;
  slot.link_group = gpu.link_group;
  slot.cores = gpu.cores;
  slot.mig_mode = gpu.mig_mode;
  slot.mig_enabled = gpu.mig_enabled;
  slot.time_slices = gpu.time_slices;
  FillGpuLoad(slot, node, gpu);
  return slot;
}

void ClusterState::FillGpuLoad(topology::GpuSlot& slot, const NodeRecord& node, const GpuInfo& gpu) const {
  // Assignments that keep the slot's buffers: refreshing a view in place
  // must not churn the heap (see RefreshView).
  slot.allocated = node.gpu_owner.count(gpu.index) > 0;
  slot.tenants = 0;
  slot.memory_used_mib = 0;
  slot.compute_used_pct = 0;
  slot.qos.clear();
  slot.mig.clear();
  if (gpu.mig_mode == "static") {
    for (const auto& instance : gpu.mig_instances) slot.mig.push_back(topology::MigSlot{instance.profile, instance.start, false});
  }
  if (gpu.cores > 0) {
    slot.cores_used.assign(gpu.cores, false);
  } else {
    slot.cores_used.clear();
  }
  auto tenants = node.gpu_tenants.find(gpu.index);
  if (tenants == node.gpu_tenants.end()) return;
  topology::DeviceLoad load = topology::DeviceLoad::Of(slot);
  for (const TaskId& id : tenants->second) {
    const TaskRecord* task = FindTask(id);
    if (task == nullptr) continue;
    topology::ApplyGrant(load, slot, task->grant(), /*add=*/true);
  }
  load.WriteTo(slot);
}

Status ClusterState::CheckGrant(const Resources& need, const PlanBind& bind, const NodeRecord& node,
                                PlanLoads& loads) const {
  const DeviceGrant& grant = bind.grant;
  if (need.Whole() && grant.time_slice) return CheckTimeSlices(bind, node, loads);
  for (uint32_t index : bind.gpu_indices) {
    auto spec = std::find_if(node.spec.gpus.begin(), node.spec.gpus.end(),
                             [index](const GpuInfo& g) { return g.index == index; });
    if (spec != node.spec.gpus.end() && spec->time_slices >= 2) {
      return Status::FailedPrecondition("GPU " + std::to_string(index) + " on " + bind.node +
                                        " is time-sliced: it takes replicas only");
    }
  }
  if (need.Whole()) {
    if (!grant.Empty()) return Status::InvalidArgument("bind grants a share to a whole-GPU task");
    for (uint32_t gpu : bind.gpu_indices) {
      auto it = loads.find({bind.node, gpu});
      if (it != loads.end() && it->second.tenants > 0) {
        return Status::FailedPrecondition("GPU " + std::to_string(gpu) + " on " + bind.node + " is shared");
      }
    }
    return Status::Ok();
  }
  if (need.cores > 0 ? grant.cores.size() != need.cores
                     : (need.Shared() != grant.shared || need.mig_profile.empty() != grant.mig_profile.empty())) {
    return Status::InvalidArgument("bind's grant does not match the task's request");
  }
  // A vendor rule may round a share up (Kunlun slice sizes, Enflame slices), never down.
  if (grant.shared && (grant.gpu_compute_pct < need.gpu_compute_pct ||
                       grant.sharing_qos != topology::EffectiveQos(need))) {
    return Status::InvalidArgument("bind's share does not match the task's request");
  }
  if (!grant.mig_profile.empty() && need.mig_profile != "auto" && grant.mig_profile != need.mig_profile) {
    return Status::InvalidArgument("bind's MIG profile is not the requested one");
  }
  for (uint32_t index : bind.gpu_indices) {
    auto spec = std::find_if(node.spec.gpus.begin(), node.spec.gpus.end(),
                             [index](const GpuInfo& g) { return g.index == index; });
    if (spec == node.spec.gpus.end() || !node.GpuUsable(*spec)) return Status::FailedPrecondition("GPU unusable");
    const topology::GpuSlot slot = GpuSlotOf(node, *spec);
    auto [it, fresh] = loads.try_emplace({bind.node, index});
    if (fresh) it->second = topology::DeviceLoad::Of(slot);
    topology::DeviceLoad& load = it->second;
    const std::string where = "GPU " + std::to_string(index) + " on " + bind.node + ": ";
    if (!grant.cores.empty()) {
      const uint32_t first = spec->index * spec->cores;
      bool any = false;
      std::vector<bool> taken = load.cores_used;  // a core granted twice is taken the second time
      for (uint32_t core : grant.cores) {
        if (spec->cores == 0 || core < first || core >= first + spec->cores) continue;
        if (taken.size() <= core - first || taken[core - first]) {
          return Status::FailedPrecondition(where + "core " + std::to_string(core) + " is taken");
        }
        taken[core - first] = true;
        any = true;
      }
      if (!any) return Status::InvalidArgument(where + "holds none of the granted cores");
      topology::ApplyGrant(load, slot, grant, /*add=*/true);
    } else if (grant.shared) {
      if (grant.gpu_memory_mib < topology::ResolveShareMemory(need, spec->memory_mib)) {
        return Status::InvalidArgument(where + "share smaller than requested");
      }
      const auto misfit = topology::CheckShare(slot, load, grant.gpu_memory_mib, grant.gpu_compute_pct, grant.sharing_qos);
      if (misfit != topology::Misfit::kNone) {
        return Status::FailedPrecondition(where + std::string(topology::MisfitText(misfit)));
      }
      topology::ApplyGrant(load, slot, grant, /*add=*/true);
    } else {
      Resources exact = need;
      exact.mig_profile = grant.mig_profile;
      exact.gpu_memory_mib = exact.gpu_memory_pct = exact.gpu_compute_pct = 0;
      topology::GpuSlot current = slot;
      current.mig = load.mig;
      const auto fit = topology::CheckMig(current, load, exact);
      if (fit.misfit != topology::Misfit::kNone) {
        return Status::FailedPrecondition(where + std::string(topology::MisfitText(fit.misfit)));
      }
      const topology::MigSlot instance{grant.mig_profile, grant.mig_start, true};
      if (spec->mig_mode == "static") {
        const bool exists = std::any_of(load.mig.begin(), load.mig.end(), [&](const topology::MigSlot& s) {
          return !s.used && s.profile == instance.profile && s.start == instance.start;
        });
        if (!exists) return Status::FailedPrecondition(where + "MIG instance not free");
      } else {
        auto trial = load;
        topology::AddMig(trial, instance);
        std::vector<topology::MigInstance> layout;
        for (const auto& s : trial.mig) layout.push_back(topology::MigInstance{s.profile, s.start});
        const auto* model = topology::FindMigModel(spec->model, spec->memory_mib);
        if (model == nullptr) return Status::FailedPrecondition(where + "no MIG profile table");
        if (auto bad = topology::CheckMigLayout(*model, layout)) return Status::FailedPrecondition(where + *bad);
      }
      topology::ApplyGrant(load, slot, grant, /*add=*/true);
    }
  }
  return Status::Ok();
}

Status ClusterState::CheckTimeSlices(const PlanBind& bind, const NodeRecord& node, PlanLoads& loads) const {
  if (!(bind.grant == DeviceGrant{.time_slice = true})) {
    return Status::InvalidArgument("bind's time-sliced replica carries a share, MIG instance or cores");
  }
  for (uint32_t index : bind.gpu_indices) {
    auto spec = std::find_if(node.spec.gpus.begin(), node.spec.gpus.end(),
                             [index](const GpuInfo& g) { return g.index == index; });
    if (spec == node.spec.gpus.end() || !node.GpuUsable(*spec)) return Status::FailedPrecondition("GPU unusable");
    const std::string where = "GPU " + std::to_string(index) + " on " + bind.node + ": ";
    if (spec->time_slices < 2) return Status::FailedPrecondition(where + "not time-sliced");
    const topology::GpuSlot slot = GpuSlotOf(node, *spec);
    auto [it, fresh] = loads.try_emplace({bind.node, index});
    if (fresh) it->second = topology::DeviceLoad::Of(slot);
    if (it->second.tenants >= spec->time_slices) return Status::FailedPrecondition(where + "every replica is held");
    topology::ApplyGrant(it->second, slot, bind.grant, /*add=*/true);
  }
  return Status::Ok();
}

std::pair<uint64_t, uint64_t> ClusterState::NumaUsed(const NodeRecord& node, int32_t id) const {
  uint64_t cpu = 0;
  uint64_t memory = 0;
  for (const TaskId& task_id : node.tasks) {
    const TaskRecord* task = FindTask(task_id);
    if (task != nullptr && task->numa_node == id) {
      cpu += task->cpu_milli;
      memory += task->memory_mib;
    }
  }
  return {cpu, memory};
}

Status ClusterState::CheckMigLayouts(const NodeSpec& node) {
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuInfo& gpu = node.gpus[i];
    if (gpu.mig_mode != "static") continue;
    const auto* model = topology::FindMigModel(gpu.model, gpu.memory_mib);
    if (model == nullptr) continue;  // no table: the instances are taken as reported
    std::vector<topology::MigInstance> layout;
    for (const auto& instance : gpu.mig_instances) layout.push_back({instance.profile, instance.start});
    if (auto bad = topology::CheckMigLayout(*model, layout)) {
      return Status::InvalidArgument("node.gpus[" + std::to_string(i) + "].mig_instances: " + *bad);
    }
  }
  return Status::Ok();
}

void ClusterState::HoldDevices(NodeRecord& node, const TaskRecord& task) {
  for (uint32_t gpu : task.gpu_indices) {
    if (task.grant().Empty()) {
      node.gpu_owner[gpu] = task.id;
    } else {
      node.gpu_tenants[gpu].insert(task.id);
    }
  }
}

void ClusterState::ReleaseDevices(NodeRecord& node, const TaskRecord& task) {
  for (uint32_t gpu : task.gpu_indices) {
    auto owner = node.gpu_owner.find(gpu);
    if (owner != node.gpu_owner.end() && owner->second == task.id) node.gpu_owner.erase(owner);
    auto tenants = node.gpu_tenants.find(gpu);
    if (tenants == node.gpu_tenants.end()) continue;
    tenants->second.erase(task.id);
    if (tenants->second.empty()) node.gpu_tenants.erase(tenants);
  }
}

}  // namespace gpool::state
