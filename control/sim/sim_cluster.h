// SimCluster: the simulator's cluster, kept as the ClusterView the
// scheduler reads, with placements applied to it the way the coordinator's
// state machine commits them (node CPU and memory, whole GPUs, shares, MIG
// instances, cores) and released when tasks end.
//
// Trace nodes carry no GPU memory; their GPUs get kTraceGpuUnits "MiB" each,
// so a trace pod's gpu_milli share is a share of exactly that many units
// (the trace's gpu_milli is a share of both compute and memory). Nodes from
// a spec file (TraceNode::view) are taken as they are (node_file.h).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "control/scheduler/scheduler.h"
#include "control/sim/trace.h"
#include "topology/cluster_view.h"

namespace gpool::sim {

inline constexpr uint64_t kTraceGpuUnits = 1000;

class SimCluster {
 public:
  explicit SimCluster(std::vector<topology::NodeView> nodes);
  static SimCluster FromTrace(const std::vector<TraceNode>& nodes);

  topology::ClusterView& view() { return view_; }
  const topology::ClusterView& view() const { return view_; }

  // Commits a placement of a task of `job`: the node's resources and the
  // running task. False (and nothing changes) when the node is unknown.
  bool Bind(const scheduler::Placement& placement, const topology::PendingJob& job, int64_t bind_order);
  // Frees what the running task holds; false when it is not running.
  bool Release(JobId job, uint32_t task_index);

  uint64_t gpu_capacity_milli() const { return gpu_capacity_milli_; }
  // Allocated GPU share over all devices, in thousandths of a GPU.
  uint64_t allocated_gpu_milli() const { return allocated_gpu_milli_; }
  // Cluster fragmentation for `workload`, in thousandths of a GPU, and the
  // free GPU share it is part of.
  double Fragmentation(const std::vector<topology::WorkloadShape>& workload) const;
  uint64_t free_gpu_milli() const;

 private:
  struct Held {
    size_t node = 0;
    scheduler::Placement placement;
  };
  uint64_t GpuMilli(const topology::GpuSlot& gpu, const scheduler::Placement& placement) const;
  void Apply(size_t node, const scheduler::Placement& placement, bool add);

  topology::ClusterView view_;
  std::unordered_map<std::string, size_t> node_index_;
  std::unordered_map<uint64_t, Held> held_;  // by (job, task)
  uint64_t gpu_capacity_milli_ = 0;
  uint64_t allocated_gpu_milli_ = 0;
};

}  // namespace gpool::sim
