#include "topology/fleet_nodes.h"

#include <algorithm>

#include "protocol/validate.h"

namespace gpool::topology {

std::string FleetNodeNumber(uint32_t index, uint32_t count) {
  const size_t width = std::max<size_t>(4, std::to_string(count).size());
  std::string number = std::to_string(index + 1);
  return std::string(width > number.size() ? width - number.size() : 0, '0') + number;
}

Result<std::vector<NodeSpec>> MakeFleetNodes(const NodeSpec& spec, const std::string& base, uint32_t count) {
  const std::string prefix = base.empty() ? spec.name : base;
  std::vector<NodeSpec> nodes;
  nodes.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const std::string number = FleetNodeNumber(i, count);
    NodeSpec node = spec;
    node.name = prefix + "-" + number;
    node.hostname = node.name;
    for (GpuInfo& gpu : node.gpus) {
      gpu.uuid += "-" + number;
      for (MigDeviceInfo& instance : gpu.mig_instances) {
        if (!instance.uuid.empty()) instance.uuid += "-" + number;
      }
    }
    Status valid = ValidateNodeSpec(node);
    if (!valid.ok()) return valid.WithContext("simulated node " + node.name.substr(0, 64));
    nodes.push_back(std::move(node));
  }
  return nodes;
}

}  // namespace gpool::topology
