#include "worker/runner/numa_pinning.h"

#include <algorithm>
#include <set>

#include "protocol/messages_worker.h"
#include "topology/cpulist.h"

namespace gpool::worker {
namespace {

// The devices a bind uses: its GPUs, or the devices holding its cores
// (node-wide core ids: a device's cores follow those of lower indices).
std::set<uint32_t> BoundDevices(const BindTask& bind, const NodeSpec& node) {
  std::set<uint32_t> devices(bind.gpu_indices.begin(), bind.gpu_indices.end());
  if (bind.cores.empty()) return devices;
  std::vector<const GpuInfo*> by_index;
  for (const auto& gpu : node.gpus) by_index.push_back(&gpu);
  std::sort(by_index.begin(), by_index.end(), [](const GpuInfo* a, const GpuInfo* b) { return a->index < b->index; });
  for (uint32_t core : bind.cores) {
    uint32_t first = 0;
    for (const GpuInfo* gpu : by_index) {
      if (core >= first && core < first + gpu->cores) devices.insert(gpu->index);
      first += gpu->cores;
    }
  }
  return devices;
}

}  // namespace

NumaPinning PlanNumaPinning(const BindTask& bind, const NodeSpec& node) {
  NumaPinning pinning;
  const NumaPolicy policy = NumaPolicyFromString(bind.numa_policy).value_or(NumaPolicy::kNone);
  if (policy == NumaPolicy::kNone) return pinning;
  const std::set<uint32_t> devices = BoundDevices(bind, node);
  std::set<int32_t> numa_ids;
  for (const auto& gpu : node.gpus) {
    if (devices.count(gpu.index) && gpu.numa >= 0) numa_ids.insert(gpu.numa);
  }
  // The scheduler placed its CPU and memory on this NUMA node (CPU-only
  // tasks have no devices to go by).
  if (bind.numa_node >= 0) numa_ids.insert(bind.numa_node);
  std::vector<uint32_t> cpus;
  for (const auto& numa : node.numa) {
    if (!numa_ids.count(numa.id)) continue;
    auto list = topology::ParseCpuList(numa.cpus);
    if (!list || list->empty()) continue;  // no cpulist (older spec, or probed without sysfs)
    cpus.insert(cpus.end(), list->begin(), list->end());
    pinning.nodes.push_back(numa.id);
  }
  if (cpus.empty()) return NumaPinning{};
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::sort(pinning.nodes.begin(), pinning.nodes.end());
  pinning.cpus = std::move(cpus);
  pinning.strict = policy == NumaPolicy::kSingleNumaNode;
  return pinning;
}

}  // namespace gpool::worker
