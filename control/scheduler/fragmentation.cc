#include "control/scheduler/fragmentation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "protocol/types.h"

namespace gpool::scheduler {

namespace {

// The node's free shares, largest first, with running sums, so each shape
// reads how many devices could take one of its GPUs and what the others
// strand in a few steps.
struct SortedFree {
  uint32_t count = 0;
  uint32_t milli[64] = {};
  double prefix[65] = {};  // prefix[k]: the k largest together
  double total() const { return prefix[count]; }
};

SortedFree Sort(const NodeFree& node) {
  SortedFree sorted;
  sorted.count = static_cast<uint32_t>(std::min<size_t>(node.gpu_milli.size(), 64));
  std::copy_n(node.gpu_milli.begin(), sorted.count, sorted.milli);
  std::sort(sorted.milli, sorted.milli + sorted.count, std::greater<>());
  for (uint32_t i = 0; i < sorted.count; ++i) sorted.prefix[i + 1] = sorted.prefix[i] + sorted.milli[i];
  return sorted;
}

// The GPU share stranded on `node` for one shape.
double Fragment(const NodeFree& node, const SortedFree& sorted, const topology::WorkloadShape& shape) {
  if (shape.gpus == 0 || shape.cpu_milli > node.cpu_milli || !GpuModelAllowed(shape.gpu_model, node.model)) {
    return sorted.total();
  }
  uint32_t fitting = 0;
  const uint32_t need = std::max<uint32_t>(shape.gpu_milli, 1);
  while (fitting < sorted.count && sorted.milli[fitting] >= need) ++fitting;
  return fitting >= shape.gpus ? sorted.total() - sorted.prefix[fitting] : sorted.total();
}

}  // namespace

double PackedFragmentation(const NodeFree& node, const std::vector<topology::WorkloadShape>& workload) {
  double total = 0;
  for (uint32_t free : node.gpu_milli) total += free;
  if (total == 0) return 0;
  // Tasks of one share size that fit by device room, per size: workloads
  // have a handful of sizes and many shapes, so each size is counted once.
  struct Fit {
    uint32_t size;
    uint64_t tasks;
  };
  Fit fits[16];
  size_t known = 0;
  double fragmentation = 0;
  for (const auto& shape : workload) {
    if (shape.gpus == 0 || shape.cpu_milli > node.cpu_milli || !GpuModelAllowed(shape.gpu_model, node.model)) {
      fragmentation += shape.weight * total;
      continue;
    }
    // What a whole-GPU shape strands once it fits is the share on devices
    // that are not idle, which FGD's measure counts already; counting it
    // here too weighed whole and multi-GPU shapes twice.
    if (shape.gpu_milli >= 1000) continue;
    const uint32_t size = std::max<uint32_t>(shape.gpu_milli, 1);
    uint64_t tasks = 0;
    const Fit* fit = std::find_if(fits, fits + known, [&](const Fit& f) { return f.size == size; });
    if (fit == fits + known) {
      for (uint32_t free : node.gpu_milli) tasks += free / size;
      if (known < std::size(fits)) fits[known++] = Fit{size, tasks};
    } else {
      tasks = fit->tasks;
    }
    if (shape.cpu_milli > 0) tasks = std::min<uint64_t>(tasks, node.cpu_milli / shape.cpu_milli);
    fragmentation += shape.weight * std::max(0.0, total - static_cast<double>(tasks) * size);
  }
  return fragmentation;
}

uint32_t FreeMilli(const topology::GpuSlot& gpu, const topology::DeviceLoad& load, bool whole_free) {
  if (whole_free) return 1000;
  if (gpu.allocated || load.tenants == 0 || load.HasMig() || gpu.memory_mib == 0) return 0;
  const uint64_t memory_free = gpu.memory_mib - std::min(gpu.memory_mib, load.memory_used_mib);
  return static_cast<uint32_t>(
      std::min<uint64_t>(memory_free * 1000 / gpu.memory_mib, (100 - std::min(100u, load.compute_used_pct)) * 10));
}

NodeFree FreeOf(const topology::NodeView& node) {
  NodeFree free;
  free.cpu_milli = node.cpu_milli_free;
  free.memory_mib = node.memory_mib_free;
  if (!node.gpus.empty()) free.model = node.gpus.front().model;
  for (const auto& gpu : node.gpus) {
    if (!gpu.healthy || MigOnlyDevice(gpu)) continue;
    free.gpu_milli.push_back(ViewFreeMilli(gpu));
  }
  return free;
}

uint32_t ViewFreeMilli(const topology::GpuSlot& gpu) {
  // No tenant, MIG layout or core in use: its load is empty, so it is whole
  // free unless allocated (what the general path below computes).
  if (gpu.tenants == 0 && gpu.mig.empty() && gpu.cores == 0 && gpu.cores_used.empty() && gpu.mig_mode.empty() &&
      !gpu.mig_enabled) {
    return gpu.allocated ? 0 : 1000;
  }
  const auto load = topology::DeviceLoad::Of(gpu);
  return FreeMilli(gpu, load, !gpu.allocated && topology::WholeFree(gpu, load));
}

double NodeFragmentation(const NodeFree& node, const std::vector<topology::WorkloadShape>& workload) {
  const SortedFree sorted = Sort(node);
  if (sorted.total() == 0) return 0;
  double fragmentation = 0;
  for (const auto& shape : workload) fragmentation += shape.weight * Fragment(node, sorted, shape);
  return fragmentation;
}

namespace {

// Per task of the workload, on average: the GPU share the GPU tasks ask for,
// their CPU and memory, and the CPU and memory of the CPU-only tasks.
struct HostDemand {
  double gpu = 0;
  double cpu = 0;
  double memory = 0;
  double cpu_only_cpu = 0;
  double cpu_only_memory = 0;
};

HostDemand DemandOf(const std::vector<topology::WorkloadShape>& workload) {
  HostDemand demand;
  for (const auto& shape : workload) {
    const double cpu = shape.weight * static_cast<double>(shape.cpu_milli);
    const double memory = shape.weight * static_cast<double>(shape.memory_mib);
    if (shape.gpus == 0) {
      demand.cpu_only_cpu += cpu;
      demand.cpu_only_memory += memory;
      continue;
    }
    demand.gpu += shape.weight * shape.gpus * std::max<uint32_t>(shape.gpu_milli, 1);
    demand.cpu += cpu;
    demand.memory += memory;
  }
  return demand;
}

// The part of `asked` that `spare` cannot hold, as a fraction of it.
double Unheld(double asked, double spare) {
  if (asked <= 0) return 0;
  return std::clamp((asked - spare) / asked, 0.0, 1.0);
}

}  // namespace

CpuOnlyClaim CpuOnlyClaimOf(const std::vector<topology::WorkloadShape>& workload, const ClusterFree& free) {
  const HostDemand demand = DemandOf(workload);
  if (demand.gpu <= 0 || free.gpu_milli <= 0) return {};
  const double tasks = free.gpu_milli / demand.gpu;  // tasks of the workload until the free GPU share is gone
  return CpuOnlyClaim{Unheld(tasks * demand.cpu_only_cpu, free.cpu_milli - tasks * demand.cpu),
                      Unheld(tasks * demand.cpu_only_memory, free.memory_mib - tasks * demand.memory)};
}

double HostStrandedFragmentation(const NodeFree& node, const std::vector<topology::WorkloadShape>& workload,
                                 const CpuOnlyClaim& claim) {
  const HostDemand demand = DemandOf(workload);
  const double gpu_demand = demand.gpu;
  const double cpu_demand = demand.cpu + claim.cpu * demand.cpu_only_cpu;
  const double memory_demand = demand.memory + claim.memory * demand.cpu_only_memory;
  double fed = std::numeric_limits<double>::infinity();
  if (cpu_demand > 0) fed = std::min(fed, static_cast<double>(node.cpu_milli) * gpu_demand / cpu_demand);
  if (memory_demand > 0) fed = std::min(fed, static_cast<double>(node.memory_mib) * gpu_demand / memory_demand);
  if (fed == std::numeric_limits<double>::infinity()) return 0;
  double total = 0;
  for (uint32_t free : node.gpu_milli) total += free;
  return std::max(0.0, total - fed);
}

namespace {

// A device's worth for a shape: its share of one GPU, or all of it.
uint32_t DeviceMilli(const topology::WorkloadShape& shape) {
  return shape.gpus == 1 ? std::clamp<uint32_t>(shape.gpu_milli, 1, 1000) : 1000;
}

}  // namespace

double PricedFragmentation(const NodeFree& node, const std::vector<topology::WorkloadShape>& workload,
                           const SharePrices& prices) {
  double fragmentation = 0;
  for (uint32_t free : node.gpu_milli) {
    if (free == 0) continue;
    const bool fed = std::any_of(workload.begin(), workload.end(), [&](const topology::WorkloadShape& shape) {
      return shape.gpus > 0 && DeviceMilli(shape) <= free && shape.cpu_milli <= node.cpu_milli &&
             shape.memory_mib <= node.memory_mib && GpuModelAllowed(shape.gpu_model, node.model);
    });
    fragmentation += fed ? prices.Stranded(free) : free;
  }
  return fragmentation;
}

FragmentationParts CombinedFragmentation(const NodeFree& node, const std::vector<topology::WorkloadShape>& workload,
                                         const CpuOnlyClaim& claim, const SharePrices& prices) {
  const double short_of_cpu = std::max(claim.cpu, claim.memory);
  FragmentationParts parts;
  if (short_of_cpu < 1) parts.eventual += (1 - short_of_cpu) * PricedFragmentation(node, workload, prices);
  if (short_of_cpu > 0) parts.eventual += short_of_cpu * PackedFragmentation(node, workload);
  parts.eventual += HostStrandedFragmentation(node, workload, claim);
  parts.now = NodeFragmentation(node, workload);
  return parts;
}

int64_t FgdScore(double growth) {
  return static_cast<int64_t>(100.0 / (1.0 + std::exp(growth / 1000.0)));
}

size_t WorkloadTally::KeyHash::operator()(const Key& key) const {
  const auto& [cpu, gpus, milli, model] = key;
  size_t h = std::hash<std::string_view>{}(model);
  for (uint64_t field : {cpu, uint64_t{gpus}, uint64_t{milli}}) h = (h ^ field) * 0x100000001B3ull + (h >> 29);
  return h;
}

void WorkloadTally::Add(uint32_t gpus, uint32_t gpu_milli, uint64_t cpu_milli, std::string_view gpu_model,
                        uint64_t memory_mib) {
  const Key key{cpu_milli, gpus, gpus == 0 ? 0 : gpu_milli, gpu_model};
  if (last_ == nullptr || last_->first != key) last_ = &*tallies_.try_emplace(key).first;
  ++last_->second.count;
  last_->second.memory += memory_mib;
  ++samples_;
}

std::vector<topology::WorkloadShape> WorkloadTally::Shapes() const {
  // Listed in key order (what a std::map of keys gave, at two tree lookups
  // per sample), then by frequency.
  std::vector<std::pair<Key, Tally>> counts(tallies_.begin(), tallies_.end());
  std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<topology::WorkloadShape> shapes;
  shapes.reserve(counts.size());
  for (const auto& [key, tally] : counts) {
    topology::WorkloadShape shape;
    shape.cpu_milli = std::get<0>(key);
    shape.gpus = std::get<1>(key);
    shape.gpu_milli = std::get<2>(key);
    shape.gpu_model = std::string(std::get<3>(key));
    shape.weight = static_cast<double>(tally.count) / static_cast<double>(samples_);
    // The sum of integers held exactly (as the double sum before did).
    shape.memory_mib = static_cast<uint64_t>(static_cast<double>(tally.memory) / static_cast<double>(tally.count) + 0.5);
    shapes.push_back(std::move(shape));
  }
  // Most frequent first; ties in key order so the result does not depend on hashing.
  std::stable_sort(shapes.begin(), shapes.end(), [](const auto& a, const auto& b) { return a.weight > b.weight; });
  return shapes;
}

std::vector<topology::WorkloadShape> TargetWorkload(const std::vector<topology::WorkloadShape>& samples) {
  WorkloadTally tally;
  for (const auto& s : samples) tally.Add(s.gpus, s.gpu_milli, s.cpu_milli, s.gpu_model, s.memory_mib);
  return tally.Shapes();
}

std::vector<topology::WorkloadShape> CommonestShapes(const std::vector<topology::WorkloadShape>& workload,
                                                     double coverage, size_t max_shapes) {
  std::vector<topology::WorkloadShape> ranked = workload;
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.weight > b.weight; });
  double total = 0;
  for (const auto& shape : ranked) total += shape.weight;
  std::vector<topology::WorkloadShape> kept;
  double covered = 0;
  for (auto& shape : ranked) {
    // A hair of slack so weights that sum to the cut in floating point still stop there.
    if (covered >= coverage * total - 1e-9 || kept.size() >= max_shapes) break;
    covered += shape.weight;
    kept.push_back(std::move(shape));
  }
  for (auto& shape : kept) shape.weight /= covered;
  return kept;
}

}  // namespace gpool::scheduler
