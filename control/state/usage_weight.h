// What an hour of a task's GPUs counts for accounting, in milli-GPUs: a
// whole GPU 1000, a share its compute fraction (30 % compute: 300), a share
// that reserves no compute (memory only, or best effort) 1000, since it may
// use the whole device's time. One rule for task usage records
// (usage_ledger.h) and a session's gpu_ms (control/session_view.cc).
#pragma once

#include <cstdint>

#include "protocol/types.h"

namespace gpool::state {

inline uint32_t GpuMilliPerGpu(const Resources& res) {
  const bool share = res.gpu_memory_mib > 0 || res.gpu_memory_pct > 0 || res.gpu_compute_pct > 0;
  if (!share || res.gpu_compute_pct == 0 || res.gpu_compute_pct >= 100) return 1000;
  return res.gpu_compute_pct * 10;
}

inline uint32_t GpuMilli(const Resources& res) { return res.gpus * GpuMilliPerGpu(res); }

}  // namespace gpool::state
