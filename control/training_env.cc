#include "control/training_env.h"

#include <vector>

namespace gpool::control {
namespace {

std::string HostOf(const state::ClusterState& state, const std::string& node) {
  const state::NodeRecord* record = state.FindNode(node);
  if (record == nullptr || record->spec.hostname.empty()) return node;
  return record->spec.hostname;
}

bool Holds(const state::TaskRecord& task) {
  return task.state == TaskState::kBound || task.state == TaskState::kRunning;
}

// "worker" -> "WORKER", "ps-0" -> "PS_0": the group's part of an env name.
std::string EnvWord(const std::string& name) {
  std::string word;
  for (char c : name) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    word += alnum ? static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c) : '_';
  }
  return word;
}

bool IsElastic(const JobSpec& spec) {
  for (const auto& group : spec.tasks) {
    if (group.MinReplicas() < group.replicas) return true;
  }
  return false;
}

}  // namespace

std::map<std::string, std::string> TrainingEnv(const state::ClusterState& state, const state::JobRecord& job,
                                               const state::TaskRecord& task) {
  std::map<std::string, std::string> env;
  // Stable across attempts and placements: the job's name, the task's group
  // and its replica number inside the group.
  uint32_t replica = 0;
  for (const auto& t : job.tasks) {
    if (t.id.index == task.id.index) break;
    if (t.group == task.group) ++replica;
  }
  env["GPOOL_TASK_NAME"] = job.spec.name + "-" + job.spec.tasks[task.group].name + "-" + std::to_string(replica);
  // An elastic job runs with the replicas it has: ranks count those. A gang
  // job is placed whole, so every task is in the layout.
  const bool elastic = IsElastic(job.spec);
  std::vector<const state::TaskRecord*> members;
  for (const auto& t : job.tasks) {
    if (!elastic || Holds(t) || t.id.index == task.id.index) members.push_back(&t);
  }
  uint32_t rank = 0;
  while (rank < members.size() && members[rank]->id.index != task.id.index) ++rank;
  env["RANK"] = std::to_string(rank);
  env["WORLD_SIZE"] = std::to_string(members.size());
  // Nodes in order of their lowest task index; tasks per node in index order.
  std::vector<std::string> nodes;
  std::map<std::string, uint32_t> slots;
  for (const auto* t : members) {
    if (t->node.empty()) return env;  // not all placed: no layout to describe
    if (slots[t->node]++ == 0) nodes.push_back(t->node);
  }
  uint32_t local_rank = 0;
  for (const auto* t : members) {
    if (t->id.index == task.id.index) break;
    if (t->node == task.node) ++local_rank;
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
  env["MASTER_ADDR"] = HostOf(state, members.front()->node);
  env["MASTER_PORT"] = std::to_string(29500 + job.id.value() % 10000);
  env["GPOOL_HOSTS"] = hosts;
  // Per group, the hosts of its replicas in replica order: what a parameter
  // server or launcher needs to find the others.
  std::map<uint32_t, std::string> group_hosts;
  for (const auto* t : members) {
    auto& list = group_hosts[t->group];
    list += (list.empty() ? "" : ",") + HostOf(state, t->node);
  }
  for (const auto& [group, list] : group_hosts) {
    env["GPOOL_" + EnvWord(job.spec.tasks[group].name) + "_HOSTS"] = list;
  }
  return env;
}

}  // namespace gpool::control
