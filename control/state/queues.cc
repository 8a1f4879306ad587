// ClusterState: the queue tree (create, update, delete, allocation).
#include <algorithm>
#include <set>

#include "control/state/cluster_state.h"
#include "protocol/model/queue_update.h"
#include "protocol/validate.h"

namespace gpool::state {
namespace {

// Far beyond any real hierarchy; bounds what one operator can make us store.
constexpr size_t kMaxQueues = 10'000;
constexpr uint32_t kMaxDepth = 16;

// `child` may not promise more than `parent` for any resource both name.
Status CheckWithin(const Quota& child, const Quota& parent, const std::string& what, const std::string& child_name,
                   const std::string& parent_name) {
  for (const auto& [resource, amount] : child) {
    auto it = parent.find(resource);
    if (it != parent.end() && amount > it->second) {
      return Status::FailedPrecondition(what + " " + resource + "=" + std::to_string(amount) + " of queue " +
                                        child_name + " is more than its parent " + parent_name + "'s " +
                                        std::to_string(it->second));
    }
  }
  return Status::Ok();
}

}  // namespace

void ClusterState::EnsureBuiltinQueues() {
  if (!queues_.count("root")) {
    QueueRecord root;
    root.spec.name = "root";
    root.spec.parent.clear();
    queues_["root"] = root;
  }
  if (!queues_.count("default")) {
    QueueRecord queue;
    queue.spec.name = "default";
    queue.spec.parent = "root";
    queues_["default"] = queue;
  }
}

const QueueRecord* ClusterState::FindQueue(std::string_view name) const {
  auto it = queues_.find(std::string(name));
  return it == queues_.end() ? nullptr : &it->second;
}

Status ClusterState::ResolveSubmitPool(JobSpec& spec) const {
  const bool shares = std::any_of(spec.tasks.begin(), spec.tasks.end(), [](const TaskGroupSpec& group) {
    return group.resources.Shared() || group.resources.Mig();
  });
  if (!shares) {
    if (spec.pool.empty()) spec.pool = "public";
    return Status::Ok();
  }
  const bool pooled_nodes =
      std::any_of(nodes_.begin(), nodes_.end(), [](const auto& entry) { return entry.second.pool == "pooled"; });
  if (spec.pool.empty()) {
    spec.pool = pooled_nodes ? "pooled" : "public";
  } else if (spec.pool == "public" && pooled_nodes) {
    return Status::FailedPrecondition(
        "GPU shares and MIG instances run on pooled nodes, and this cluster has some; public nodes take whole "
        "devices (submit without --pool, or with --pool pooled)");
  }
  return Status::Ok();
}

Status ClusterState::CheckSubmitPool(const std::string& queue, const std::string& pool) const {
  // The queue and its ancestors (bounded: a tree of queues_.size() levels at most).
  std::set<std::string> chain;
  for (std::string at = queue; !at.empty() && chain.size() <= queues_.size() && chain.insert(at).second;) {
    const QueueRecord* record = FindQueue(at);
    if (record != nullptr && !record->spec.pools.empty() &&
        std::find(record->spec.pools.begin(), record->spec.pools.end(), pool) == record->spec.pools.end()) {
      std::string allowed;
      for (const auto& p : record->spec.pools) allowed += (allowed.empty() ? "" : ", ") + p;
      return Status::FailedPrecondition("queue '" + at + "' runs jobs only in the pools " + allowed + ", not '" +
                                        pool + "'" + (at == queue ? "" : " (queue '" + queue + "' is under it)"));
    }
    at = record == nullptr || at == "root" ? "" : record->spec.parent;
  }
  if (pool != "exclusive") return Status::Ok();
  for (const auto& [name, node] : nodes_) {
    if (node.pool == "exclusive" && (node.pool_queue.empty() || chain.count(node.pool_queue))) return Status::Ok();
  }
  return Status::FailedPrecondition("queue '" + queue + "' owns no exclusive nodes (an operator assigns them with "
                                    "`gpool node pool NAME exclusive --queue " + queue + "`)");
}

Status ClusterState::CheckSubmitQueue(const std::string& name) const {
  if (!queues_.count(name)) {
    return Status::NotFound("queue '" + name + "' does not exist (`gpool queue tree` lists the queues)");
  }
  for (const auto& [other, queue] : queues_) {
    if (queue.spec.parent == name) {
      return Status::InvalidArgument("queue '" + name + "' has child queues; submit to one of its leaves (e.g. '" +
                                     other + "')");
    }
  }
  return Status::Ok();
}

Status ClusterState::CheckQueueAgainstTree(const QueueSpec& spec, bool creating) const {
  const QueueRecord* parent = FindQueue(spec.parent);
  if (parent == nullptr) return Status::NotFound("parent queue '" + spec.parent + "' does not exist");
  if (creating) {
    if (queues_.size() >= kMaxQueues) {
      return Status::ResourceExhausted("at most " + std::to_string(kMaxQueues) + " queues");
    }
    uint32_t depth = 1;
    for (const QueueRecord* at = parent; at != nullptr && !at->spec.parent.empty(); at = FindQueue(at->spec.parent)) {
      ++depth;
    }
    if (depth >= kMaxDepth) return Status::FailedPrecondition("queues nest at most " + std::to_string(kMaxDepth) + " deep");
    for (const auto& [id, job] : jobs_) {
      if (job.spec.queue == spec.parent && !IsTerminal(job.state)) {
        return Status::FailedPrecondition("queue '" + spec.parent + "' has unfinished jobs (job " + std::to_string(id) +
                                          "); jobs run only in leaf queues, so it cannot get children yet");
      }
    }
  }
  const std::string& parent_name = parent->spec.name;
  GPOOL_RETURN_IF_ERROR(CheckWithin(spec.capability, parent->spec.capability, "capability", spec.name, parent_name));
  // Guarantees must add up within the parent's.
  Quota siblings = spec.guarantee;
  for (const auto& [name, queue] : queues_) {
    if (name == spec.name || queue.spec.parent != spec.parent) continue;
    for (const auto& [resource, amount] : queue.spec.guarantee) siblings[resource] += amount;
  }
  GPOOL_RETURN_IF_ERROR(
      CheckWithin(siblings, parent->spec.guarantee, "guarantee (with its siblings')", spec.name, parent_name));
  // And what the queue's own children already have must still fit in it.
  Quota children_guarantee;
  for (const auto& [name, queue] : queues_) {
    if (queue.spec.parent != spec.name) continue;
    GPOOL_RETURN_IF_ERROR(CheckWithin(queue.spec.capability, spec.capability, "capability", name, spec.name));
    for (const auto& [resource, amount] : queue.spec.guarantee) children_guarantee[resource] += amount;
  }
  return CheckWithin(children_guarantee, spec.guarantee, "guarantee (of its children together)", spec.name + "'s children",
                     spec.name);
}

ApplyResult ClusterState::ApplyUpdateQueue(const UpdateQueueCmd& cmd) {
  ApplyResult result;
  const UpdateQueue& update = cmd.update;
  // Validated at the edge (the gateway); the op is known (decoding refuses
  // others), apply needs a name and checks the tree's own rules below.
  if (update.spec.name.empty()) {
    result.status = Status::InvalidArgument("queue update without a queue name");
    return result;
  }
  if (update.op == QueueOp::kGrantClass || update.op == QueueOp::kRevokeClass) return ApplyClassGrant(update);
  const std::string& name = update.spec.name;
  auto existing = queues_.find(name);
  if (update.op == QueueOp::kDelete) {
    // An invariant of the state, not a rule of the edge: every job's queue
    // chain ends at root, and submissions without a queue go to default.
    if (name == "root" || name == "default") {
      result.status = Status::FailedPrecondition("queue " + name + " always exists and cannot be deleted");
      return result;
    }
    if (existing == queues_.end()) {
      result.status = Status::NotFound("queue '" + name + "' does not exist");
      return result;
    }
    for (const auto& [other, queue] : queues_) {
      if (queue.spec.parent == name) {
        result.status = Status::FailedPrecondition("queue '" + name + "' has child queue '" + other + "'; delete it first");
        return result;
      }
    }
    for (const auto& [id, job] : jobs_) {
      if (job.spec.queue == name && !IsTerminal(job.state)) {
        result.status = Status::FailedPrecondition("queue '" + name + "' has unfinished job " + std::to_string(id));
        return result;
      }
    }
    queues_.erase(existing);
    billing_.CloseAccount(name);  // issue 50: its credit goes with it
    return result;
  }
  QueueSpec spec = update.spec;
  if (update.op == QueueOp::kCreate) {
    if (existing != queues_.end()) {
      result.status = Status::AlreadyExists("queue '" + name + "' already exists");
      return result;
    }
    result.status = CheckQueueAgainstTree(spec, true);
  } else {
    if (existing == queues_.end()) {
      result.status = Status::NotFound("queue '" + name + "' does not exist");
      return result;
    }
    // Fields the sender left out keep their values (an older client knows
    // fewer of them; UpdateQueue.keep).
    spec = QueueSpecAfterUpdate(existing->second.spec, update);
    spec.parent = existing->second.spec.parent;  // an update never moves a queue
    if (name == "root") {
      spec.parent.clear();
      result.status = Status::Ok();
      for (const auto& [child, queue] : queues_) {
        if (queue.spec.parent == "root" && result.status.ok()) {
          result.status = CheckWithin(queue.spec.capability, spec.capability, "capability", child, "root");
        }
      }
    } else {
      result.status = CheckQueueAgainstTree(spec, false);
    }
  }
  if (!result.status.ok()) return result;
  // The spec only: a quota update keeps the queue's class grants.
  queues_[name].spec = std::move(spec);
  return result;
}

void ClusterState::CountQueueHeld(const JobRecord& job, const NodeRecord& node, const TaskRecord& task, int sign) {
  auto add = [sign](uint64_t& total, uint64_t amount) {
    total = sign > 0 ? total + amount : total - std::min(total, amount);
  };
  QueueHeld& held = queue_held_[job.spec.queue];
  const uint64_t gpus = task.gpu_indices.size();
  add(held.gpu, gpus);
  add(held.cpu, task.cpu_milli);
  add(held.memory, task.memory_mib);
  if (gpus > 0) {
    for (const auto& gpu : node.spec.gpus) {
      if (gpu.index != task.gpu_indices.front() || gpu.model.empty()) continue;
      auto it = held.gpu_by_model.try_emplace(gpu.model, 0).first;
      add(it->second, gpus);
      if (it->second == 0) held.gpu_by_model.erase(it);
    }
  }
  if (held.gpu == 0 && held.cpu == 0 && held.memory == 0 && held.gpu_by_model.empty()) {
    queue_held_.erase(job.spec.queue);
  }
}

// From the nodes' task lists: after a Restore, and when a registration
// changes the model of a GPU that tasks hold (what they were counted under).
void ClusterState::RebuildQueueHeld() {
  queue_held_.clear();
  for (const auto& [name, node] : nodes_) {
    for (const TaskId& id : node.tasks) {
      const JobRecord* job = FindJob(id.job);
      const TaskRecord* task = FindTask(id);
      if (job != nullptr && task != nullptr) CountQueueHeld(*job, node, *task, +1);
    }
  }
}

std::map<std::string, Quota> ClusterState::QueueAllocations() const {
  std::map<std::string, Quota> allocated;
  for (const auto& [leaf, held] : queue_held_) {
    Quota quota;
    if (held.gpu > 0) quota["gpu"] = held.gpu;
    if (held.cpu > 0) quota["cpu"] = held.cpu;
    if (held.memory > 0) quota["memory"] = held.memory;
    for (const auto& [model, gpus] : held.gpu_by_model) quota["gpu/" + model] = gpus;
    if (quota.empty()) continue;
    // Up the tree; a parent chain longer than the tree is a corrupt one.
    std::string at(leaf);
    for (size_t steps = 0; !at.empty() && steps <= queues_.size(); ++steps) {
      for (const auto& [resource, amount] : quota) allocated[at][resource] += amount;
      const QueueRecord* queue = FindQueue(at);
      at = queue == nullptr ? std::string() : queue->spec.parent;
    }
  }
  return allocated;
}

}  // namespace gpool::state
