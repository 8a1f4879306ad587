#include "topology/device_share.h"

#include <algorithm>

#include "topology/mig.h"

namespace gpool::topology {

DeviceLoad DeviceLoad::Of(const GpuSlot& gpu) {
  DeviceLoad load;
  load.tenants = gpu.tenants;
  load.memory_used_mib = gpu.memory_used_mib;
  load.compute_used_pct = gpu.compute_used_pct;
  load.qos = gpu.qos;
  load.mig = gpu.mig;
  load.cores_used = gpu.cores_used;
  if (load.cores_used.size() < gpu.cores) load.cores_used.resize(gpu.cores, false);
  return load;
}

void DeviceLoad::WriteTo(GpuSlot& gpu) const {
  gpu.tenants = tenants;
  gpu.memory_used_mib = memory_used_mib;
  gpu.compute_used_pct = compute_used_pct;
  gpu.qos = qos;
  gpu.mig = mig;
  gpu.cores_used = cores_used;
}

bool DeviceLoad::HasMig() const {
  return std::any_of(mig.begin(), mig.end(), [](const MigSlot& slot) { return slot.used; });
}

std::string_view MisfitText(Misfit misfit) {
  switch (misfit) {
    case Misfit::kNone: return "fits";
    case Misfit::kHeldWhole: return "GPU held whole";
    case Misfit::kMigMode: return "GPU in another sharing mode (MIG or shares)";
    case Misfit::kMemory: return "insufficient GPU memory for the share";
    case Misfit::kUnknownMemory: return "GPU memory not reported";
    case Misfit::kCompute: return "insufficient GPU compute for the share";
    case Misfit::kQos: return "GPU shared under another QoS";
    case Misfit::kTenants: return "GPU at its tenant limit";
    case Misfit::kProfile: return "no free MIG instance of the profile";
    case Misfit::kNoMigTable: return "no MIG profile table for the GPU model";
  }
  return "unknown";
}

std::string EffectiveQos(const Resources& need) {
  return need.sharing_qos.empty() ? std::string(ToString(SharingQos::kBestEffort)) : need.sharing_qos;
}

uint64_t ResolveShareMemory(const Resources& need, uint64_t device_mib) {
  if (need.gpu_memory_mib > 0) return need.gpu_memory_mib;
  if (need.gpu_memory_pct > 0) return (device_mib * need.gpu_memory_pct + 99) / 100;
  return 0;
}

Misfit CheckShare(const GpuSlot& gpu, const DeviceLoad& load, uint64_t memory_mib, uint32_t compute_pct,
                  std::string_view qos) {
  if (gpu.allocated) return Misfit::kHeldWhole;
  if (MigOnly(gpu) || load.HasMig()) return Misfit::kMigMode;
  if (load.tenants >= kMaxTenantsPerDevice) return Misfit::kTenants;
  if (memory_mib > 0 && gpu.memory_mib == 0) return Misfit::kUnknownMemory;
  if (load.memory_used_mib + memory_mib > gpu.memory_mib) return Misfit::kMemory;
  if (load.compute_used_pct + compute_pct > 100) return Misfit::kCompute;
  if (compute_pct < 100 && !load.qos.empty() && load.qos != qos) return Misfit::kQos;
  return Misfit::kNone;
}

void AddShare(DeviceLoad& load, uint64_t memory_mib, uint32_t compute_pct, std::string_view qos) {
  ++load.tenants;
  load.memory_used_mib += memory_mib;
  load.compute_used_pct += compute_pct;
  if (compute_pct < 100 && load.qos.empty()) load.qos = qos;
}

void RemoveShare(DeviceLoad& load, uint64_t memory_mib, uint32_t compute_pct) {
  if (load.tenants > 0) --load.tenants;
  load.memory_used_mib -= std::min(load.memory_used_mib, memory_mib);
  load.compute_used_pct -= std::min(load.compute_used_pct, compute_pct);
  if (load.tenants == 0) load.qos.clear();
}

namespace {

std::vector<MigInstance> InUse(const DeviceLoad& load) {
  std::vector<MigInstance> used;
  for (const auto& slot : load.mig) {
    if (slot.used) used.push_back(MigInstance{slot.profile, slot.start});
  }
  return used;
}

// Static MIG: the instances exist; take a free one of the named profile, or
// for "auto" the smallest free one that holds the request.
MigFit CheckStaticMig(const GpuSlot& gpu, const DeviceLoad& load, const Resources& need) {
  const MigModel* model = FindMigModel(gpu.model, gpu.memory_mib);
  MigFit best;
  best.misfit = Misfit::kProfile;
  const uint64_t memory = ResolveShareMemory(need, gpu.memory_mib);
  for (const auto& slot : load.mig) {
    if (slot.used) continue;
    if (need.mig_profile != "auto") {
      if (slot.profile != need.mig_profile) continue;
      const MigProfile* profile = model ? FindProfile(*model, slot.profile) : nullptr;
      return MigFit{Misfit::kNone, MigSlot{slot.profile, slot.start, true}, profile ? profile->memory_mib : 0};
    }
    if (model == nullptr) return MigFit{Misfit::kNoMigTable, {}, 0};
    const MigProfile* profile = FindProfile(*model, slot.profile);
    if (profile == nullptr || profile->memory_mib < memory || MigComputePct(*model, *profile) < need.gpu_compute_pct) {
      continue;
    }
    if (best.misfit != Misfit::kNone || profile->memory_mib < best.memory_mib) {
      best = MigFit{Misfit::kNone, MigSlot{slot.profile, slot.start, true}, profile->memory_mib};
    }
  }
  return best;
}

MigFit CheckDynamicMig(const GpuSlot& gpu, const DeviceLoad& load, const Resources& need) {
  if (load.tenants > 0 && !load.HasMig()) return MigFit{Misfit::kMigMode, {}, 0};  // shared, not MIG
  const MigModel* model = FindMigModel(gpu.model, gpu.memory_mib);
  if (model == nullptr) return MigFit{Misfit::kNoMigTable, {}, 0};
  const auto used = InUse(load);
  if (need.mig_profile == "auto") {
    auto choice = BestFitMig(*model, ResolveShareMemory(need, gpu.memory_mib), need.gpu_compute_pct, used);
    if (!choice) return MigFit{Misfit::kProfile, {}, 0};
    return MigFit{Misfit::kNone, MigSlot{choice->profile->name, choice->start, true}, choice->profile->memory_mib};
  }
  const MigProfile* profile = FindProfile(*model, need.mig_profile);
  if (profile == nullptr) return MigFit{Misfit::kProfile, {}, 0};
  auto start = FindMigStart(*model, *profile, used);
  if (!start) return MigFit{Misfit::kProfile, {}, 0};
  return MigFit{Misfit::kNone, MigSlot{profile->name, *start, true}, profile->memory_mib};
}

}  // namespace

MigFit CheckMig(const GpuSlot& gpu, const DeviceLoad& load, const Resources& need) {
  if (gpu.allocated) return MigFit{Misfit::kHeldWhole, {}, 0};
  if (gpu.mig_mode == "static") return CheckStaticMig(gpu, load, need);
  if (gpu.mig_mode == "dynamic") return CheckDynamicMig(gpu, load, need);
  return MigFit{Misfit::kMigMode, {}, 0};
}

void AddMig(DeviceLoad& load, const MigSlot& instance) {
  ++load.tenants;
  for (auto& slot : load.mig) {
    if (slot.profile == instance.profile && slot.start == instance.start) {
      slot.used = true;
      return;
    }
  }
  load.mig.push_back(MigSlot{instance.profile, instance.start, true});
}

void RemoveMig(DeviceLoad& load, const MigSlot& instance, bool destroy) {
  if (load.tenants > 0) --load.tenants;
  for (auto it = load.mig.begin(); it != load.mig.end(); ++it) {
    if (it->profile == instance.profile && it->start == instance.start) {
      if (destroy) {
        load.mig.erase(it);
      } else {
        it->used = false;
      }
      return;
    }
  }
}

void ApplyGrant(DeviceLoad& load, const GpuSlot& gpu, const DeviceGrant& grant, bool add) {
  if (!grant.mig_profile.empty()) {
    const MigSlot instance{grant.mig_profile, grant.mig_start, true};
    add ? AddMig(load, instance) : RemoveMig(load, instance, gpu.mig_mode == "dynamic");
  } else if (grant.shared) {
    add ? AddShare(load, grant.gpu_memory_mib, grant.gpu_compute_pct, grant.sharing_qos)
        : RemoveShare(load, grant.gpu_memory_mib, grant.gpu_compute_pct);
  } else if (grant.time_slice) {
    if (add) {
      ++load.tenants;
    } else if (load.tenants > 0) {
      --load.tenants;
    }
  } else if (!grant.cores.empty()) {
    const uint32_t first = gpu.index * gpu.cores;
    for (uint32_t core : grant.cores) {
      if (gpu.cores == 0 || core < first || core >= first + gpu.cores) continue;
      if (load.cores_used.size() < gpu.cores) load.cores_used.resize(gpu.cores, false);
      load.cores_used[core - first] = add;
    }
    if (add) {
      ++load.tenants;
    } else if (load.tenants > 0) {
      --load.tenants;
    }
  }
}

bool MigOnly(const GpuSlot& gpu) { return gpu.mig_mode == "static" || gpu.mig_enabled; }

bool HasTenants(const GpuSlot& gpu, const DeviceLoad& load) {
  return load.tenants > 0 || MigOnly(gpu) || load.HasMig() ||
         std::any_of(load.cores_used.begin(), load.cores_used.end(), [](bool used) { return used; });
}

bool WholeFree(const GpuSlot& gpu, const DeviceLoad& load) {
  return gpu.healthy && !gpu.allocated && !gpu.TimeSliced() && !HasTenants(gpu, load);
}

}  // namespace gpool::topology
