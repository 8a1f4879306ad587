// The coordinator's /metrics page: every series a Prometheus scrape of a
// replica gets, rendered from the committed state, the replication report
// and what ControlMetrics recorded. Runs on the loop thread.
//
// Names (docs/operations.md "Metrics" lists them all): gpool_ prefix, base
// units, _total counters, histograms for latencies. Series only the serving
// leader keeps moving say "(leader)" in their HELP; state-derived ones are
// the same on every replica, as of what it has applied.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "control/log/commit_log.h"
#include "control/metrics/control_metrics.h"
#include "control/state/cluster_state.h"
#include "control/worker_table.h"

namespace gpool::control {

// One webhook sink's delivery figures (health::WebhookSinkStats, copied by
// the coordinator: metrics sit below the health library).
struct WebhookSinkFigures {
  uint64_t attempts = 0;   // requests sent
  uint64_t failures = 0;   // of them: no answer, TLS refused, or not 2xx
  uint64_t delivered = 0;  // events acknowledged with 2xx
  uint64_t given_up = 0;   // events failed max_attempts times, or refused with a 4xx
  uint64_t skipped = 0;    // events its filter does not want
  uint64_t queued = 0;     // events waiting
};

struct CoordinatorMetricsInput {
  const state::ClusterState* state = nullptr;
  const ControlMetrics* recorded = nullptr;
  const WorkerTable* workers = nullptr;
  log::ReplicationReport replication;
  std::string replica_id;
  std::string version;
  bool leading = false;
  int64_t now_wall_ms = 0;
  // Per-GPU series (one per GPU and kind): on by default; a very large
  // cluster may keep only the per-model totals (--metrics-per-gpu=false).
  bool per_gpu = true;
  // The leader's webhook sinks by name (HealthDriver::SinkStats); none on a
  // follower, which sends nothing.
  std::map<std::string, WebhookSinkFigures> webhooks;
  // Issue 48: what the per-key limits hold now on this replica (connections
  // counted for a key, requests waiting for an answer, exec commands open).
  struct KeyLimitCounts {
    uint64_t connections = 0;
    uint64_t inflight_requests = 0;
    uint64_t exec_streams = 0;
  } key_limits;
};

std::string RenderCoordinatorMetrics(const CoordinatorMetricsInput& input);

}  // namespace gpool::control
