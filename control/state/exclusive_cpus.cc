// ClusterState's exclusive whole cores (Resources::exclusive_cores): which
// CPU ids a node's tasks hold, what the scheduler sees free, and the
// re-check of a plan's ids before they commit, so a plan built on an older
// view cannot give one core to two tasks.
#include <algorithm>

#include "control/state/cluster_state.h"
#include "topology/cpulist.h"

namespace gpool::state {

std::vector<uint32_t> ClusterState::ExclusiveCpusHeld(const NodeRecord& node) const {
  std::vector<uint32_t> held;
  for (const TaskId& id : node.tasks) {
    const TaskRecord* task = FindTask(id);
    if (task != nullptr) held.insert(held.end(), task->cpu_ids().begin(), task->cpu_ids().end());
  }
  std::sort(held.begin(), held.end());
  return held;
}

void ClusterState::FillNumaCpuIds(topology::NodeView& view, const NodeRecord& node) const {
  const bool listed = std::any_of(node.spec.numa.begin(), node.spec.numa.end(),
                                  [](const NumaInfo& numa) { return !numa.cpus.empty(); });
  std::vector<uint32_t> held;
  if (listed) held = ExclusiveCpusHeld(node);
  for (size_t i = 0; i < node.spec.numa.size() && i < view.numa.size(); ++i) {
    auto& free = view.numa[i].cpu_ids_free;
    free.clear();
    if (node.spec.numa[i].cpus.empty()) continue;
    // Validated when the node registered; a list that no longer parses offers nothing.
    for (uint32_t id : topology::ParseCpuList(node.spec.numa[i].cpus).value_or(std::vector<uint32_t>{})) {
      if (!std::binary_search(held.begin(), held.end(), id)) free.push_back(id);
    }
  }
}

Status ClusterState::CheckExclusiveCpus(const Resources& need, const PlanBind& bind, const NodeRecord& node,
                                        PlanCpus& cpus) const {
  if (!need.exclusive_cores) {
    if (!bind.cpu_ids.empty()) return Status::InvalidArgument("bind gives exclusive cores to a task that asked for none");
    return Status::Ok();
  }
  if (bind.cpu_ids.size() != need.cpu_milli / 1000) {
    return Status::InvalidArgument("bind's exclusive cores do not match the task's request");
  }
  const std::vector<uint32_t> held = ExclusiveCpusHeld(node);
  std::vector<uint32_t> own;
  for (const NumaInfo& numa : node.spec.numa) {
    auto ids = topology::ParseCpuList(numa.cpus).value_or(std::vector<uint32_t>{});
    own.insert(own.end(), ids.begin(), ids.end());
  }
  std::sort(own.begin(), own.end());
  for (uint32_t id : bind.cpu_ids) {
    const std::string what = "CPU " + std::to_string(id) + " on " + bind.node;
    if (!std::binary_search(own.begin(), own.end(), id)) return Status::InvalidArgument(what + " is not the node's");
    if (std::binary_search(held.begin(), held.end(), id) || !cpus.emplace(bind.node, id).second) {
      return Status::FailedPrecondition(what + " is held by another task");
    }
  }
  return Status::Ok();
}

}  // namespace gpool::state
