// NvmlUsageSampler: GpuUsageSampler over NVML. Each Sample asks every GPU
// (by index, whole GPUs only) for its compute processes and sums their
// usedGpuMemory per pid; bytes become MiB, rounded up, after summing.
//
// Entry points, newest first: nvmlDeviceGetComputeRunningProcesses_v3,
// _v2 (both fill nvmlProcessInfo_v2_t), then the unsuffixed one (the
// shorter nvmlProcessInfo_v1_t). A driver with none of them gives empty
// samples, said once at Open. Each query is sized by NVML's own
// INSUFFICIENT_SIZE answer and retried while processes keep appearing.
//
// Failure means no number rather than a wrong one: if any GPU's query
// fails the whole sample is empty (a task on that GPU would otherwise be
// under-reported). The first failure is logged at info, later ones at
// debug until a sample succeeds again. Processes whose usage NVML withholds
// (NVML_VALUE_NOT_AVAILABLE: another user's or container's, for an
// unprivileged worker) are skipped, logged once.
//
// NVML stays initialised for the sampler's lifetime so a sample costs only
// the per-GPU queries (milliseconds), cheap enough for the heartbeat path.
//
// Not covered: with MIG on, NVML gives the whole-GPU list only to
// privileged callers; an unprivileged worker then gets an error and empty
// samples. PIDs are those of NVML's PID namespace: a worker in a container
// without the host's PID namespace will not find its tasks in them.
//
// Thread-safety: one thread (the agent's).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <spdlog/logger.h>

#include "protocol/base/status.h"
#include "worker/discovery/nvml_library.h"
#include "worker/runner/gpu_usage_sampler.h"

namespace gpool::worker {

struct NvmlUsageSamplerOptions {
  std::string library = "libnvidia-ml.so.1";  // as NvmlProbeOptions::library
  std::shared_ptr<spdlog::logger> logger;      // nullptr: spdlog's default
};

class NvmlUsageSampler final : public GpuUsageSampler {
 public:
  // Loads and initialises NVML (errors as NvmlLibrary::Open). A driver
  // without a per-process entry point is not an error: samples are empty.
  static Result<std::unique_ptr<NvmlUsageSampler>> Open(NvmlUsageSamplerOptions options);

  std::map<int64_t, uint64_t> Sample() override;

  // The entry point in use; empty when the driver has none.
  const std::string& entry_point() const { return entry_point_; }

 private:
  NvmlUsageSampler(std::unique_ptr<NvmlLibrary> lib, std::shared_ptr<spdlog::logger> log);

  // Adds device `index`'s processes to `bytes` (pid -> bytes).
  Status SampleDevice(unsigned int index, std::map<int64_t, unsigned long long>* bytes);
  void OnFailure(const Status& status);

  std::unique_ptr<NvmlLibrary> lib_;
  std::shared_ptr<spdlog::logger> log_;
  std::string entry_point_;
  nvml::GetProcessesV2Fn get_v2_ = nullptr;  // _v3 or _v2
  nvml::GetProcessesV1Fn get_v1_ = nullptr;  // unsuffixed, when neither exists
  bool failing_ = false;                    // the last sample failed (logged)
  bool withheld_logged_ = false;
};

}  // namespace gpool::worker
