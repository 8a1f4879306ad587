#include "control/sim/sim_cluster.h"

#include <algorithm>

#include "control/scheduler/fragmentation.h"
#include "topology/device_share.h"

namespace gpool::sim {

namespace {

uint64_t TaskKey(JobId job, uint32_t task_index) { return (job.value() << 20) ^ task_index; }

}  // namespace

SimCluster::SimCluster(std::vector<topology::NodeView> nodes) {
  view_.nodes = std::move(nodes);
  for (size_t i = 0; i < view_.nodes.size(); ++i) {
    node_index_.emplace(view_.nodes[i].name, i);
    for (const auto& gpu : view_.nodes[i].gpus) gpu_capacity_milli_ += gpu.healthy ? 1000 : 0;
  }
}

SimCluster SimCluster::FromTrace(const std::vector<TraceNode>& nodes) {
  std::vector<topology::NodeView> views;
  views.reserve(nodes.size());
  for (const auto& trace : nodes) {
    if (trace.view != nullptr) {
      views.push_back(*trace.view);
      continue;
    }
    topology::NodeView node;
    node.name = trace.name;
    node.cpu_milli_total = node.cpu_milli_free = trace.cpu_milli;
    node.memory_mib_total = node.memory_mib_free = trace.memory_mib;
    for (uint32_t g = 0; g < trace.gpus; ++g) {
      topology::GpuSlot gpu;
      gpu.index = g;
      gpu.model = trace.model;
      gpu.memory_mib = kTraceGpuUnits;
      gpu.uuid = "GPU-" + trace.name + "-" + std::to_string(g);
      node.gpus.push_back(std::move(gpu));
    }
    views.push_back(std::move(node));
  }
  return SimCluster(std::move(views));
}

uint64_t SimCluster::GpuMilli(const topology::GpuSlot& gpu, const scheduler::Placement& placement) const {
  if (!placement.grant.shared) return 1000;
  if (gpu.memory_mib == 0) return 0;
  return std::min<uint64_t>(1000, std::max(placement.grant.gpu_memory_mib * 1000 / gpu.memory_mib,
                                           uint64_t{placement.grant.gpu_compute_pct} * 10));
}

void SimCluster::Apply(size_t node_index, const scheduler::Placement& placement, bool add) {
  auto& node = view_.nodes[node_index];
  if (add) {
    node.cpu_milli_free -= std::min(node.cpu_milli_free, placement.cpu_milli);
    node.memory_mib_free -= std::min(node.memory_mib_free, placement.memory_mib);
  } else {
    node.cpu_milli_free = std::min(node.cpu_milli_total, node.cpu_milli_free + placement.cpu_milli);
    node.memory_mib_free = std::min(node.memory_mib_total, node.memory_mib_free + placement.memory_mib);
  }
  const auto& grant = placement.grant;
  for (uint32_t index : placement.gpu_indices) {
    auto gpu = std::find_if(node.gpus.begin(), node.gpus.end(), [&](const auto& g) { return g.index == index; });
    if (gpu == node.gpus.end()) continue;
    const uint64_t milli = GpuMilli(*gpu, placement);
    if (grant.Empty()) {
      gpu->allocated = add;
    } else {
      topology::DeviceLoad load = topology::DeviceLoad::Of(*gpu);
      topology::ApplyGrant(load, *gpu, grant, add);
      load.WriteTo(*gpu);
    }
    // The allocation figure counts whole devices and shares (as the trace
    // does); MIG instances and cores are placed but not counted.
    if (!grant.mig_profile.empty() || !grant.cores.empty()) continue;
    if (add) {
      allocated_gpu_milli_ += milli;
    } else {
      allocated_gpu_milli_ -= std::min(allocated_gpu_milli_, milli);
    }
  }
}

bool SimCluster::Bind(const scheduler::Placement& placement, const topology::PendingJob& job, int64_t bind_order) {
  auto it = node_index_.find(placement.node);
  if (it == node_index_.end()) return false;
  Apply(it->second, placement, true);
  topology::RunningTask task;
  task.job = placement.job;
  task.task_index = placement.task_index;
  task.queue = job.queue;
  task.user = job.user;
  task.priority_class = job.priority_class;
  task.priority = job.priority;
  task.node = placement.node;
  task.gpus = static_cast<uint32_t>(placement.gpu_indices.size());
  const auto& gpus = view_.nodes[it->second].gpus;
  if (!placement.gpu_indices.empty() && !gpus.empty()) task.gpu_model = gpus.front().model;
  task.gpu_memory_mib = placement.gpu_memory_mib;
  task.cpu_milli = placement.cpu_milli;
  task.memory_mib = placement.memory_mib;
  task.bind_order = bind_order;
  view_.running.push_back(std::move(task));
  held_[TaskKey(placement.job, placement.task_index)] = Held{it->second, placement};
  return true;
}

bool SimCluster::Release(JobId job, uint32_t task_index) {
  auto it = held_.find(TaskKey(job, task_index));
  if (it == held_.end()) return false;
  Apply(it->second.node, it->second.placement, false);
  held_.erase(it);
  auto& running = view_.running;
  auto at = std::find_if(running.begin(), running.end(),
                         [&](const auto& t) { return t.job == job && t.task_index == task_index; });
  if (at != running.end()) {
    *at = std::move(running.back());
    running.pop_back();
  }
  return true;
}

double SimCluster::Fragmentation(const std::vector<topology::WorkloadShape>& workload) const {
  double total = 0;
  for (const auto& node : view_.nodes) total += scheduler::NodeFragmentation(scheduler::FreeOf(node), workload);
  return total;
}

uint64_t SimCluster::free_gpu_milli() const {
  uint64_t total = 0;
  for (const auto& node : view_.nodes) {
    for (uint32_t milli : scheduler::FreeOf(node).gpu_milli) total += milli;
  }
  return total;
}

}  // namespace gpool::sim
