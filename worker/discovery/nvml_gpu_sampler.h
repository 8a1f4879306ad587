// NvmlGpuSampler: how busy each GPU of the node is, and how much of its
// memory is in use, as NVML reports them (nvmlDeviceGetUtilizationRates,
// nvmlDeviceGetMemoryInfo). The worker's /metrics reports them per GPU, and
// its heartbeats carry them to the coordinator for the low-utilisation alert.
//
// A GPU whose query fails (lost, no permission, a driver without the entry
// point) is reported as unknown rather than as 0 % busy: an alert must never
// fire on a figure nobody measured.
//
// Thread-safety: one thread (the worker's loop).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "worker/discovery/nvml_library.h"

namespace gpool::worker {

struct GpuSample {
  uint32_t index = 0;
  bool known = false;             // false: the query failed, the figures mean nothing
  uint32_t utilization_pct = 0;   // of the last sample period (NVML's, 1/6 s to 1 s)
  uint64_t memory_used_bytes = 0;
  uint64_t memory_total_bytes = 0;
};

class NvmlGpuSampler {
 public:
  // Errors as NvmlLibrary::Open.
  static Result<std::unique_ptr<NvmlGpuSampler>> Open(const std::string& library);
  // One sample per GPU NVML counts, by index.
  std::vector<GpuSample> Sample();

 private:
  explicit NvmlGpuSampler(std::unique_ptr<NvmlLibrary> lib);
  std::unique_ptr<NvmlLibrary> lib_;
  nvml::GetUtilizationFn utilization_ = nullptr;
  nvml::GetMemoryFn memory_ = nullptr;
};

}  // namespace gpool::worker
