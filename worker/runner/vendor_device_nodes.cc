#include "worker/runner/vendor_device_nodes.h"

#include <algorithm>
#include <map>
#include <set>

#include "worker/vendor/vendor_profile.h"

namespace gpool::worker {
namespace {

std::string VendorNodePath(const std::string& root, std::string_view pattern, uint32_t number) {
  std::string relative(pattern);
  const size_t at = relative.find("%u");
  if (at != std::string::npos) relative.replace(at, 2, std::to_string(number));
  return root + "/" + relative;
}

// The node GPU indices the task holds: its bound GPUs, plus for core binds
// the devices its cores are on (VisibleCores numbers cores node-wide).
std::set<uint32_t> HeldGpuIndices(const BindTask& bind, const NodeSpec& node) {
  std::set<uint32_t> held(bind.gpu_indices.begin(), bind.gpu_indices.end());
  if (bind.cores.empty()) return held;
  std::vector<const GpuInfo*> by_index;
  for (const GpuInfo& gpu : node.gpus) by_index.push_back(&gpu);
  std::sort(by_index.begin(), by_index.end(), [](const GpuInfo* a, const GpuInfo* b) { return a->index < b->index; });
  const std::set<uint32_t> cores(bind.cores.begin(), bind.cores.end());
  uint32_t first = 0;
  for (const GpuInfo* gpu : by_index) {
    for (uint32_t c = first; c < first + gpu->cores; ++c) {
      if (cores.count(c)) held.insert(gpu->index);
    }
    first += gpu->cores;
  }
  return held;
}

}  // namespace

std::vector<DeviceNodeAccess> VendorDeviceNodes(const BindTask& bind, const NodeSpec& node,
                                                const std::string& device_root) {
  std::map<NodeVendor, uint32_t> devices;  // per family: its GPUs in the spec
  for (const GpuInfo& gpu : node.gpus) ++devices[VendorOf(gpu)];
  std::map<NodeVendor, std::set<uint32_t>> held;  // per family: the ordinals the task holds
  for (uint32_t index : HeldGpuIndices(bind, node)) {
    const GpuInfo* gpu = FindGpu(node, index);
    const int32_t ordinal = FamilyOrdinal(node, index);
    if (gpu != nullptr && ordinal >= 0) held[VendorOf(*gpu)].insert(static_cast<uint32_t>(ordinal));
  }
  std::vector<DeviceNodeAccess> nodes;
  for (const auto& [family, count] : devices) {
    if (family == NodeVendor::kNvidia) continue;
    const VendorProfile& profile = ProfileOf(family);
    const std::set<uint32_t>& mine = held[family];
    const uint32_t scan = std::max(count, kVendorNodeScan);
    for (const DeviceNodePattern& pattern : profile.device_nodes) {
      for (uint32_t ordinal = 0; ordinal < scan; ++ordinal) {
        nodes.push_back({VendorNodePath(device_root, pattern.pattern, pattern.offset + ordinal), mine.count(ordinal) > 0});
      }
    }
    for (std::string_view shared : profile.shared_nodes) {
      nodes.push_back({device_root + "/" + std::string(shared), !mine.empty()});
    }
  }
  return nodes;
}

}  // namespace gpool::worker
