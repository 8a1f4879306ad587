// The GPU health checks, through NVML (worker/discovery/nvml_library.h):
//
//   XidCheck (every 100 ms): XID events from nvmlEventSetWait_v2 with
//     timeout 0. An XID is an event, not a state: its condition (kind xid,
//     device gpu/<i>, the last code in `xid`, count = events) stays raised for
//     xid_hold_ms after the GPU's last event, then clears. Severity: warning
//     for the application XIDs (a program's fault), fatal for the rest; the
//     coordinator's catalogue decides what fences (control/health/).
//     A fatal code is kept over a later application one on the same GPU.
//   GpuStateCheck (every 2 s): a GPU fallen off the bus (GPU_IS_LOST from
//     any query, a handle that cannot be had, the device count below what
//     discovery saw) -> gpu-lost, fatal; volatile uncorrectable ECC errors
//     above the count at start -> ecc-uncorrectable, fatal; retired pages
//     pending -> retired-pages-pending, degraded; row remap pending ->
//     row-remap-pending, degraded, failure -> row-remap-failure, fatal;
//     NVLinks active at start and inactive now -> nvlink-down, degraded (one
//     condition per GPU naming the links); temperature at or above
//     max_temp_c (0: off) -> thermal, degraded.
//
// NVML device i is the node's i-th GPU (gpu_indices[i] names it): what
// discovery reports, and what a simulated node (--spec) with an explicit
// --nvml-library maps to, so tests inject faults into a fake NVML.
// Entry points an older driver lacks are skipped, not guessed.
//
// Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <spdlog/logger.h>

#include "worker/discovery/nvml_library.h"
#include "worker/health/health_check.h"

namespace gpool::worker {

struct GpuCheckOptions {
  std::vector<uint32_t> gpu_indices;  // the node's GPU index for NVML device 0, 1, ...
  int64_t xid_interval_ms = 100;
  int64_t state_interval_ms = 2000;
  int64_t xid_hold_ms = 300'000;
  uint32_t max_temp_c = 0;
  std::vector<int32_t> application_xids = {13, 31, 43, 45, 68, 109};
};

// Both checks over one library, kept open by them.
std::vector<std::unique_ptr<HealthCheck>> MakeGpuChecks(std::shared_ptr<NvmlLibrary> nvml, GpuCheckOptions options,
                                                        std::shared_ptr<spdlog::logger> logger);

}  // namespace gpool::worker
