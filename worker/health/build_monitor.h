// The health monitor gpool-worker runs, assembled from its flags: GPU checks
// through NVML where the GPUs came from NVML (or, on a --spec node, from an
// explicitly given --nvml-library: how tests inject faults), the vendor
// tool checks for other accelerator families found on the host
// (vendor_health_check.h), NIC checks over
// sysfs, and the node-service checks (fabric manager, nvidia_peermem, free
// disk in the data dir, coordinator reachability).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/logger.h>

#include "protocol/base/clock.h"
#include "protocol/types.h"
#include "worker/flags.h"
#include "worker/health/health_monitor.h"

namespace gpool::worker {

// nullptr when --health off. `coordinator_silent_ms` says how long the
// coordinator has been silent (-1: unknown); it is called from the monitor.
// `gpu_held` says whether a task holds a GPU (the GPU repair waits for it);
// null: no GPU repair. `labelled_off` says whether the node's labels turn a
// self-repair action (its label, repair.gpool.io/<action>) off now, asked
// before each action (the worker's LabelOverlay: the spec's labels and the
// operator's); null: the spec's labels alone.
using RepairLabelQuery = std::function<bool(std::string_view label)>;
std::unique_ptr<HealthMonitor> BuildHealthMonitor(const WorkerFlags& flags, const NodeSpec& node, const Clock* clock,
                                                  std::function<int64_t()> coordinator_silent_ms,
                                                  std::shared_ptr<spdlog::logger> logger,
                                                  std::function<bool(uint32_t)> gpu_held = nullptr,
                                                  RepairLabelQuery labelled_off = nullptr);

// The GPU repair's reset command from --health-gpu-reset-command (split on
// spaces), or the default when empty.
std::vector<std::string> GpuResetCommand(const std::string& flag);

}  // namespace gpool::worker
