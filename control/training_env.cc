#include "control/training_env.h"

#include <vector>

namespace gpool::control {
namespace {

std::string HostOf(const state::ClusterState& state, const std::string& node) {
  const state::NodeRecord* record = state.FindNode(node);
  if (record == nullptr || record->spec.hostname.empty()) return node;
  return record->spec.hostname;
}

}  // namespace

std::map<std::string, std::string> TrainingEnv(const state::ClusterState& state, const state::JobRecord& job,
                                               const state::TaskRecord& task) {
  std::map<std::string, std::string> env;
  env["RANK"] = std::to_string(task.id.index);
  env["WORLD_SIZE"] = std::to_string(job.tasks.size());
  // Nodes in order of their lowest task index; tasks per node in index order.
  std::vector<std::string> nodes;
  std::map<std::string, uint32_t> slots;
  for (const auto& t : job.tasks) {
    if (t.node.empty()) return env;  // not all placed: no layout to describe
    if (slots[t.node]++ == 0) nodes.push_back(t.node);
  }
  uint32_t local_rank = 0;
  for (const auto& t : job.tasks) {
    if (t.id.index == task.id.index) break;
    if (t.node == task.node) ++local_rank;
  }
  uint32_t node_rank = 0;
  while (node_rank < nodes.size() && nodes[node_rank] != task.node) ++node_rank;
  std::string hosts;
  for (const auto& node : nodes) {
    hosts += (hosts.empty() ? "" : ",") + HostOf(state, node) + ":" + std::to_string(slots[node]);
  }
  env["LOCAL_RANK"] = std::to_string(local_rank);
  env["LOCAL_WORLD_SIZE"] = std::to_string(slots[task.node]);
  env["NODE_RANK"] = std::to_string(node_rank);
  env["NNODES"] = std::to_string(nodes.size());
  env["MASTER_ADDR"] = HostOf(state, job.tasks.front().node);
  env["MASTER_PORT"] = std::to_string(29500 + job.id.value() % 10000);
  env["GPOOL_HOSTS"] = hosts;
  return env;
}

}  // namespace gpool::control
