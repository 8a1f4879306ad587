#include "control/scheduler/device_pick.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "topology/mig.h"

namespace gpool::scheduler {
namespace {

using topology::DeviceLoad;
using topology::Misfit;

// Of several devices' reasons, the one that tells the user most: a QoS or
// room mismatch says more than "in another mode".
int Telling(Misfit misfit) {
  switch (misfit) {
    case Misfit::kQos: return 9;
    case Misfit::kMemory: return 8;
    case Misfit::kCompute: return 7;
    case Misfit::kProfile: return 6;
    case Misfit::kTenants: return 5;
    case Misfit::kUnknownMemory: return 4;
    case Misfit::kNoMigTable: return 3;
    case Misfit::kMigMode: return 2;
    case Misfit::kHeldWhole: return 1;
    case Misfit::kNone: break;
  }
  return 0;
}

void Note(Misfit& worst, Misfit misfit) {
  if (Telling(misfit) > Telling(worst)) worst = misfit;
}

struct Candidate {
  size_t slot;
  uint64_t key_room;   // best fit: less room left first
  uint64_t key_extra;  // tie-break
};

// Up to `count` candidates, all on one NUMA node when `single`; best fit first.
std::vector<size_t> Choose(const topology::NodeView& node, std::vector<Candidate> candidates, uint32_t count,
                           topology::NumaPolicy numa) {
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.key_room, a.key_extra, a.slot) < std::tie(b.key_room, b.key_extra, b.slot);
  });
  auto take = [&](auto&& keep) {
    std::vector<size_t> chosen;
    for (const auto& c : candidates) {
      if (chosen.size() == count) break;
      if (keep(c.slot)) chosen.push_back(c.slot);
    }
    return chosen;
  };
  if (numa != topology::NumaPolicy::kNone && count > 1) {
    std::map<int32_t, uint32_t> per_numa;
    for (const auto& c : candidates) ++per_numa[node.gpus[c.slot].numa];
    for (const auto& c : candidates) {  // the NUMA node of the best-fitting device that has enough
      const int32_t id = node.gpus[c.slot].numa;
      if (id >= 0 && per_numa[id] >= count) {
        return take([&](size_t slot) { return node.gpus[slot].numa == id; });
      }
    }
    if (numa == topology::NumaPolicy::kSingleNumaNode) return {};
  }
  auto chosen = take([](size_t) { return true; });
  return chosen.size() == count ? chosen : std::vector<size_t>{};
}

DevicePick PickShares(const topology::NodeView& node, const std::vector<DeviceLoad>& loads,
                      const DeviceBits& allowed, const Resources& need, topology::NumaPolicy numa,
                      topology::PlacementPolicy gpu_policy) {
  // Spread turns the best-fit order around: most room left first.
  const bool spread = gpu_policy == topology::PlacementPolicy::kSpread;
  DevicePick pick;
  const std::string qos = topology::EffectiveQos(need);
  std::vector<Candidate> candidates;
  uint64_t memory = 0;
  for (size_t g = 0; g < node.gpus.size(); ++g) {
    if (!allowed[g]) continue;
    const auto& gpu = node.gpus[g];
    const uint64_t mine = topology::ResolveShareMemory(need, gpu.memory_mib);
    const Misfit misfit = topology::CheckShare(gpu, loads[g], mine, need.gpu_compute_pct, qos);
    if (misfit != Misfit::kNone) {
      Note(pick.misfit, misfit);
      continue;
    }
    memory = std::max(memory, mine);
    const uint64_t room = gpu.memory_mib - loads[g].memory_used_mib - mine;
    const uint64_t compute_room = 100 - loads[g].compute_used_pct - need.gpu_compute_pct;
    candidates.push_back(spread ? Candidate{g, ~room, ~compute_room} : Candidate{g, room, compute_room});
  }
  if (candidates.size() < need.gpus) {
    if (pick.misfit == Misfit::kNone) pick.misfit = Misfit::kHeldWhole;
    return pick;
  }
  pick.slots = Choose(node, std::move(candidates), need.gpus, numa);
  if (pick.slots.empty()) {
    pick.misfit = Misfit::kNone;  // the caller reports NUMA
    return pick;
  }
  // One size for every share of the task: on a node of mixed devices a
  // percentage resolves to the largest, which every chosen device holds
  // (each was checked with its own, and equal models are the norm).
  memory = 0;
  for (size_t g : pick.slots) memory = std::max(memory, topology::ResolveShareMemory(need, node.gpus[g].memory_mib));
  for (size_t g : pick.slots) {
    if (topology::CheckShare(node.gpus[g], loads[g], memory, need.gpu_compute_pct, qos) != Misfit::kNone) {
      pick.slots.clear();
      pick.misfit = Misfit::kMemory;
      return pick;
    }
  }
  pick.grant.shared = true;
  pick.grant.gpu_memory_mib = memory;
  pick.grant.gpu_compute_pct = need.gpu_compute_pct;
  pick.grant.sharing_qos = qos;
  return pick;
}

// How busy a MIG device is, for spread: its instances in use, and the
// memory slices they take (0 for a profile the model's table lacks).
std::pair<uint32_t, uint32_t> MigDeviceUse(const topology::GpuSlot& gpu, const DeviceLoad& load) {
  const topology::MigModel* model = topology::FindMigModel(gpu.model, gpu.memory_mib);
  uint32_t instances = 0;
  uint32_t slices = 0;
  for (const auto& slot : load.mig) {
    if (!slot.used) continue;
    ++instances;
    const topology::MigProfile* profile = model != nullptr ? topology::FindProfile(*model, slot.profile) : nullptr;
    if (profile != nullptr) slices += profile->memory_slices;
  }
  return {instances, slices};
}

DevicePick PickMig(const topology::NodeView& node, const std::vector<DeviceLoad>& loads,
                   const DeviceBits& allowed, const Resources& need, topology::PlacementPolicy gpu_policy) {
  const bool spread = gpu_policy == topology::PlacementPolicy::kSpread;
  DevicePick pick;
  std::optional<size_t> best;
  topology::MigFit best_fit;
  // (idle, instances in use, memory slices in use, instance memory, slot);
  // the two use counts stay 0 unless the job spreads, so default and binpack
  // keep "a MIG device first, the smallest instance, the lowest slot".
  using MigKey = std::tuple<bool, uint32_t, uint32_t, uint64_t, size_t>;
  MigKey best_key{};
  for (size_t g = 0; g < node.gpus.size(); ++g) {
    if (!allowed[g]) continue;
    const auto fit = topology::CheckMig(node.gpus[g], loads[g], need);
    if (fit.misfit != Misfit::kNone) {
      Note(pick.misfit, fit.misfit);
      continue;
    }
    // Switching an idle device to MIG costs a whole GPU: last resort, under
    // spread too (device_pick.h says why).
    const bool idle = node.gpus[g].mig_mode == "dynamic" && !loads[g].HasMig();
    const auto [instances, slices] = spread ? MigDeviceUse(node.gpus[g], loads[g]) : std::pair<uint32_t, uint32_t>{};
    const MigKey key{idle, instances, slices, fit.memory_mib, g};
    if (!best || key < best_key) {
      best = g;
      best_fit = fit;
      best_key = key;
    }
  }
  if (!best) {
    if (pick.misfit == Misfit::kNone) pick.misfit = Misfit::kProfile;
    return pick;
  }
  pick.slots = {*best};
  pick.grant.mig_profile = best_fit.instance.profile;
  pick.grant.mig_start = best_fit.instance.start;
  pick.grant.gpu_memory_mib = best_fit.memory_mib;
  return pick;
}

}  // namespace

DevicePick PickShared(const topology::NodeView& node, const std::vector<DeviceLoad>& loads,
                      const DeviceBits& allowed, const Resources& need, topology::NumaPolicy numa,
                      topology::PlacementPolicy gpu_policy) {
  if (need.Mig()) return PickMig(node, loads, allowed, need, gpu_policy);
  return PickShares(node, loads, allowed, need, numa, gpu_policy);
}

}  // namespace gpool::scheduler
