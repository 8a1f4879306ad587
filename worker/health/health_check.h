// HealthCheck: one of the worker's health checks (GPU, NIC, node services).
// The HealthMonitor (health_monitor.h) runs each at its own interval and
// merges what they find into the node's typed conditions (protocol/health.h).
//
// Contract: Run returns what the check finds wrong *now*. Each check owns the
// condition kinds it lists in kinds(): a condition of one of those kinds that
// a run does not report again is cleared. A check that cannot look (its
// library or file is gone) reports nothing for what it cannot see rather than
// guessing; a check whose subject has vanished (a GPU fallen off the bus)
// reports that as its finding. Run must not block: checks poll (NVML events
// with timeout 0, sysfs reads).
//
// Thread-safety: one thread (the agent's loop).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/health.h"

namespace gpool::worker {

struct HealthFinding {
  HealthKind kind = HealthKind::kXid;
  std::string device;  // "gpu/0", "ib/mlx5_0/1", "eth/eth0", "disk", ""
  HealthSeverity severity = HealthSeverity::kWarning;
  std::string message;
  int32_t xid = 0;
  // New occurrences since the last run (XID events). A lasting state found
  // again reports 0: only its last-seen time moves.
  uint64_t new_events = 0;
};

class HealthCheck {
 public:
  virtual ~HealthCheck() = default;
  virtual std::string_view name() const = 0;
  virtual int64_t interval_ms() const = 0;
  virtual std::vector<HealthKind> kinds() const = 0;
  virtual std::vector<HealthFinding> Run(int64_t wall_ms) = 0;
};

}  // namespace gpool::worker
