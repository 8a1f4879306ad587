// The counters and histograms components keep for /metrics, one struct per
// component, so a component depends on its own figures and not on the
// whole collector (control_metrics.h). Owned by the coordinator; components
// get a pointer (null: not measured) and write on the loop thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "protocol/metrics/exposition.h"

namespace gpool::control {

struct SchedulingMetrics {
  metrics::Histogram cycle_seconds{metrics::LatencyBounds()};
  metrics::Histogram decisions_per_cycle{metrics::CountBounds()};
  // What refreshing the scheduler's view took the loop thread, per cycle.
  metrics::Histogram view_refresh_seconds{metrics::LatencyBounds()};
  uint64_t cycles = 0;
  uint64_t binds = 0;
  std::map<std::string, uint64_t> evictions_by_cause;  // preempt | reclaim | other
};

struct ReplicationMetrics {
  metrics::Histogram commit_seconds{metrics::LatencyBounds()};
  uint64_t commits = 0;  // this replica's own proposals committed
  uint64_t leader_changes = 0;
  uint64_t snapshots = 0;
  uint64_t last_snapshot_bytes = 0;
};

struct WorkerMetrics {
  uint64_t heartbeats = 0;
  uint64_t registrations = 0;
  uint64_t task_events = 0;
  // Resends of a task event whose first copy was still waiting to commit:
  // answered by that one, not proposed again.
  uint64_t task_events_in_flight_dropped = 0;
  // Registration retries on the same connection while the first was still
  // being committed: answered by that one, not proposed again.
  uint64_t registrations_in_flight_dropped = 0;
  uint64_t tasks_lost = 0;
  // Binds and preempts due but held back by their node's window of
  // unacknowledged commands (a gauge the dispatcher keeps current).
  uint64_t commands_waiting = 0;
  // Commands sent again: unacknowledged past their timeout, or acknowledged
  // and still not in effect (a reconfirm).
  uint64_t commands_resent = 0;
  metrics::Histogram command_ack_seconds{metrics::LatencyBounds()};  // bind/preempt sent -> acked
};

// "preempt", "reclaim" or "other", from an eviction's reason text.
std::string EvictionCause(const std::string& reason);

}  // namespace gpool::control
