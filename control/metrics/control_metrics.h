// ControlMetrics: what the coordinator measures as it runs, for /metrics.
//
// Most series are read from the committed state at scrape time
// (coordinator_metrics.cc); these are the ones that only exist as events:
// how long cycles and commits took, how many heartbeats arrived, how long a
// job waited to start. Components record into it on the loop thread, and the
// scrape reads it on the same thread (through the LoopInbox), so nothing here
// is shared between threads.
//
// Leader-only: the scheduler, dispatcher and node registry run only on the
// serving leader, so their counters stand still on a follower (their HELP
// text says so); the replication series are every replica's own.
#pragma once

#include <cstdint>
#include <string>
#include <set>

#include "control/metrics/loop_stall.h"
#include "control/metrics/metric_sets.h"
#include "control/state/cluster_state.h"
#include "control/worker_table.h"

namespace gpool::control {

// Listens to the node registry for the job-level events: a job's first start
// (submit-to-running) and lost tasks.
class ControlMetrics final : public WorkerEvents {
 public:
  explicit ControlMetrics(const state::ClusterState& state) : state_(state) {}

  SchedulingMetrics scheduling;
  ReplicationMetrics replication;
  WorkerMetrics workers;
  metrics::Histogram submit_to_running_seconds{metrics::WaitBounds()};
  LoopStallMeter loop;  // every replica's own loop (issue 49)

  // WorkerEvents
  void NodeConnected(const std::string& node) override;
  void TaskSettled(const TaskId& task) override;

  // Forgets jobs that left the state (called at scrape time), so the set of
  // jobs already counted stays as small as the state's.
  void Prune();

 private:
  const state::ClusterState& state_;
  std::set<uint64_t> started_;  // jobs whose wait was observed (ordered: Prune erases a range)
};

}  // namespace gpool::control
