// ScaleDriver: the leader's evaluation of elastic jobs' scale rules
// (protocol/scale_rule.h, issue 50).
//
// Every check_every_ms the serving leader looks at each live job with scale
// rules, gathers each group's signals (jobs pending in a queue from the
// committed state; the utilisation of the GPUs its running replicas hold
// from the workers' heartbeats; the wall clock) and lets DecideScale
// (state/scale_decision.h) pick a target. A change is proposed as a
// ScaleJobCmd: applied on every replica alike, it moves the target the
// scheduler is offered and records a "job-scaled" event, and its time
// starts the cool-down, so a new leader keeps it. Growth only offers the
// scheduler more of the job's own elastic replicas, which it places into
// capacity the class rules let them have (class_rules.h); shrinking stops
// only the job's own replicas. Never below the minimum, never above
// `replicas`. While the replicas run mixed state versions that would apply
// a ScaleJobCmd differently (Proposer::Admissible), nothing is proposed:
// the hold is logged once, and so is the resumption.
//
// Thread-safety: the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "control/leader_service.h"
#include "control/ports.h"
#include "control/state/cluster_state.h"
#include "control/worker_table.h"
#include "protocol/base/clock.h"

namespace gpool::control {

struct ScaleDriverOptions {
  int64_t check_every_ms = 5'000;
  size_t max_changes_per_check = 100;  // a flood waits for the next check
};

class ScaleDriver : public LeaderService {
 public:
  ScaleDriver(const ScaleDriverOptions& options, const state::ClusterState& state, const WorkerTable& workers,
              Proposer& proposer, const Clock* clock)
      : options_(options), state_(state), workers_(workers), proposer_(proposer), clock_(clock) {}

  // Leader only. `now_ms` is monotonic.
  void Tick(int64_t now_ms) override;
  void Reset() override;

  // The changes the rules want now (wall clock `now_wall_ms`), for tests.
  std::vector<state::ScaleJobCmd> Evaluate(int64_t now_wall_ms) const;

 private:
  // Mean utilisation of the GPUs the group's running replicas hold, where
  // their workers measure them.
  std::optional<uint32_t> GroupUtilisation(const state::JobRecord& job, uint32_t group) const;

  ScaleDriverOptions options_;
  const state::ClusterState& state_;
  const WorkerTable& workers_;
  Proposer& proposer_;
  const Clock* clock_;
  int64_t next_check_ms_ = 0;
  bool held_ = false;  // the last check's changes were not admissible (Proposer::Admissible)
  size_t in_flight_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace gpool::control
