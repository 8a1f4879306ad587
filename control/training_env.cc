#include "control/training_env.h"
#include "protocol/messages_worker.h"

#include <string_view>
#include <vector>

namespace gpool::control {
namespace {

std::string HostOf(const state::ClusterState& state, const std::string& node) {
  const state::NodeRecord* record = state.FindNode(node);
  if (record == nullptr || record->spec.hostname.empty()) return node;
  return record->spec.hostname;
}

// What the node advertised (NodeSpec.address); empty: its workers' peers
// resolve its host themselves.
std::string AddressOf(const state::ClusterState& state, std::string_view node) {
  const state::NodeRecord* record = state.FindNode(std::string(node));
  return record == nullptr ? std::string() : record->spec.address;
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

TrainingLayout::TrainingLayout(const state::ClusterState& state, const state::JobRecord& job,
                               const state::TaskRecord& task)
    : job_(&job), elastic_(IsElastic(job.spec)), built_for_(task.id.index) {
  const size_t n = job.tasks.size();
  replica_.assign(n, 0);
  member_.assign(n, -1);
  std::vector<uint32_t> per_group(job.spec.tasks.size(), 0);
  std::vector<const state::TaskRecord*> members;
  for (size_t i = 0; i < n; ++i) {
    const state::TaskRecord& t = job.tasks[i];
    if (t.group < per_group.size()) replica_[i] = per_group[t.group]++;
    if (!elastic_ || Holds(t) || t.id.index == task.id.index) {
      member_[i] = static_cast<int64_t>(members.size());
      members.push_back(&t);
    }
  }
  members_ = static_cast<uint32_t>(members.size());
  // Nodes in order of their lowest task index; tasks per node in index order.
  std::map<std::string_view, uint32_t> rank_of;
  std::vector<std::string_view> nodes;
  node_of_.reserve(members.size());
  local_rank_.reserve(members.size());
  for (const auto* t : members) {
    if (t->node.empty()) return;  // not all placed: no layout to describe
    auto [it, fresh] = rank_of.try_emplace(t->node, static_cast<uint32_t>(nodes.size()));
    if (fresh) {
      nodes.push_back(t->node);
      slots_.push_back(0);
    }
    node_of_.push_back(it->second);
    local_rank_.push_back(slots_[it->second]++);
  }
  placed_ = !members.empty();
  if (!placed_) return;
  std::vector<std::string> host_of, address_of;
  host_of.reserve(nodes.size());
  address_of.reserve(nodes.size());
  for (std::string_view node : nodes) {
    host_of.push_back(HostOf(state, std::string(node)));
    address_of.push_back(AddressOf(state, node));
  }
  for (size_t r = 0; r < nodes.size(); ++r) hosts_.push_back(HostSlots{host_of[r], slots_[r]});
  master_ = host_of[node_of_.front()];
  task_hosts_.reserve(members.size());
  // One slot per task, as the hostfile by node gave one per task there:
  // `mpirun -np $GPOOL_NUM_TASKS` runs one rank in each task.
  for (size_t m = 0; m < members.size(); ++m) {
    task_hosts_.push_back(TaskHost{TaskName(*members[m]), host_of[node_of_[m]], 1, address_of[node_of_[m]]});
  }
  // Per group, the hosts of its replicas in replica order: what a parameter
  // server or launcher needs to find the others.
  std::map<uint32_t, std::string> group_hosts;
  for (size_t m = 0; m < members.size(); ++m) {
    auto& list = group_hosts[members[m]->group];
    list += (list.empty() ? "" : ",") + host_of[node_of_[m]];
  }
  for (auto& [group, list] : group_hosts) {
    group_hosts_["GPOOL_" + EnvWord(job.spec.tasks[group].name) + "_HOSTS"] = std::move(list);
  }
}

bool TrainingLayout::Covers(const state::TaskRecord& task) const {
  return !elastic_ || task.id.index == built_for_ ||
         (task.id.index < member_.size() && member_[task.id.index] >= 0 && Holds(task));
}

std::map<std::string, std::string> TrainingLayout::EnvFor(const state::TaskRecord& task) const {
  const state::JobRecord& job = *job_;
  std::map<std::string, std::string> env;
  // Stable across attempts and placements: the job's name, the task's group
  // and its replica number inside the group.
  const uint32_t index = task.id.index;
  env["GPOOL_TASK_NAME"] = TaskName(task);
  // An elastic job runs with the replicas it has: ranks count those. A gang
  // job is placed whole, so every task is in the layout.
  const int64_t member = index < member_.size() ? member_[index] : -1;
  env["RANK"] = std::to_string(member >= 0 ? member : members_);
  env["WORLD_SIZE"] = std::to_string(members_);
  if (!placed_ || member < 0) return env;
  const uint32_t node = node_of_[member];
  env["LOCAL_RANK"] = std::to_string(local_rank_[member]);
  env["LOCAL_WORLD_SIZE"] = std::to_string(slots_[node]);
  env["NODE_RANK"] = std::to_string(node);
  env["NNODES"] = std::to_string(slots_.size());
  env["MASTER_ADDR"] = master_;
  env["MASTER_PORT"] = std::to_string(29500 + job.id.value() % 10000);
  std::string hosts;
  for (const HostSlots& h : hosts_) hosts += (hosts.empty() ? "" : ",") + h.host + ":" + std::to_string(h.slots);
  env["GPOOL_HOSTS"] = std::move(hosts);
  for (const auto& [key, value] : group_hosts_) env[key] = value;
  return env;
}

std::string TrainingLayout::TaskName(const state::TaskRecord& task) const {
  const uint32_t index = task.id.index;
  return job_->spec.name + "-" + job_->spec.tasks[task.group].name + "-" +
         std::to_string(index < replica_.size() ? replica_[index] : 0);
}

std::vector<TaskHost> TrainingLayout::TaskHostsFor(const state::TaskRecord& task) const {
  const uint32_t index = task.id.index;
  const bool member = index < member_.size() && member_[index] >= 0;
  return placed_ && member ? task_hosts_ : std::vector<TaskHost>{};
}

std::vector<HostSlots> TrainingLayout::HostsFor(const state::TaskRecord& task) const {
  const uint32_t index = task.id.index;
  const bool member = index < member_.size() && member_[index] >= 0;
  return placed_ && member ? hosts_ : std::vector<HostSlots>{};
}

std::map<std::string, std::string> TrainingEnv(const state::ClusterState& state, const state::JobRecord& job,
                                               const state::TaskRecord& task) {
  return TrainingLayout(state, job, task).EnvFor(task);
}

}  // namespace gpool::control
