// ClusterView: an immutable, scheduler-facing picture of the cluster.
//
// Built by the coordinator from its state machine (or by the simulator and
// benches from synthetic data) and handed to the pure scheduler. Holds only
// what placement needs: per-node capacity and what is free right now, and the
// jobs waiting for placement in arrival order. No ids from control/ leak in,
// so the scheduler, simulator and benches share it without pulling in the
// coordinator. Plain values; safe to copy and read from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/base/ids.h"
#include "protocol/types.h"

namespace gpool::topology {

struct GpuSlot {
  uint32_t index = 0;
  std::string model;
  uint64_t memory_mib = 0;
  bool healthy = true;
  bool allocated = false;
};

struct NodeView {
  std::string name;
  bool ready = true;
  bool cordoned = false;
  std::string pool = "public";  // public, pooled or exclusive
  uint64_t cpu_milli_total = 0;
  uint64_t cpu_milli_free = 0;
  uint64_t memory_mib_total = 0;
  uint64_t memory_mib_free = 0;
  std::vector<GpuSlot> gpus;
  std::map<std::string, std::string> labels;

  uint32_t FreeGpus() const;
  uint32_t UsableGpus() const;  // healthy GPUs, allocated or not
};

struct PendingTask {
  uint32_t index = 0;
  Resources resources;
};

struct PendingJob {
  JobId id;
  int32_t priority = 0;
  uint64_t arrival = 0;  // submission order; lower came first
  std::string queue;
  std::vector<PendingTask> tasks;  // the tasks still to place; all-or-nothing
};

struct ClusterView {
  std::vector<NodeView> nodes;
  std::vector<PendingJob> pending;
};

}  // namespace gpool::topology
