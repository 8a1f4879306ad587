// GpuUsageSampler: how much GPU memory each OS process on this node uses,
// as the driver sees it. The NVML implementation is
// discovery/nvml_usage_sampler.h; nodes that cannot measure (simulated
// --spec nodes, no driver) have none, and their heartbeats carry no usage.
// Which task a process belongs to is task_usage.h's business, not the
// sampler's.
//
// Thread-safety: an implementation belongs to one thread (the agent's).
#pragma once

#include <cstdint>
#include <map>

namespace gpool::worker {

class GpuUsageSampler {
 public:
  virtual ~GpuUsageSampler() = default;
  // pid -> MiB in use, summed over the node's GPUs. Empty when nothing can
  // be measured right now; never fails loudly (the heartbeat must go out).
  virtual std::map<int64_t, uint64_t> Sample() = 0;
};

}  // namespace gpool::worker
