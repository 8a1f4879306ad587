// HealthDriver: the leader's health loop. It turns committed node health into
// fences (the health policy, control/health/policy.h) and the committed event
// stream into webhook notices (control/health/webhook_sink.h).
//
// Tick, on the leader, at most every kEvaluateEveryMs:
//  - builds the policy's input from the committed state (conditions, cordons,
//    GPUs fenced, the breaker, fences and suppressed alerts in the event
//    stream) and the worker table (each node's completed health-check
//    rounds, counted into clear rounds here), evaluates the policy, and
//    proposes each action as a HealthFenceCmd. While any of them is in flight
//    it does not evaluate again, so no action is proposed twice; the policy
//    is idempotent over committed state, so a new leader repeats nothing that
//    already committed.
//  - keeps one WebhookSink per configured receiver, opened from the sink's
//    committed cursor, offers it what the stream holds past what it took, and
//    commits its cursor (SinkCursorCmd) when it moved, at most every
//    kCursorEveryMs. A new leader resumes from the committed cursors: a
//    notice may be sent again (same dedupe key), none is skipped.
// Reset (leadership lost or gained) stops the sinks and forgets what was in
// flight. Reconfigure swaps the policy config (SIGHUP); sinks whose config
// changed are reopened from their committed cursor.
//
// Thread-safety: the coordinator's loop thread owns it. Sinks call back on
// their own threads only to record a cursor (under a mutex).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "control/health/policy.h"
#include "control/health/webhook_sink.h"
#include "control/leader_service.h"
#include "control/ports.h"
#include "control/state/cluster_state.h"
#include "control/worker_table.h"
#include "protocol/base/clock.h"

namespace gpool::control {

class HealthDriver : public LeaderService {
 public:
  static constexpr int64_t kEvaluateEveryMs = 100;
  static constexpr int64_t kCursorEveryMs = 500;

  HealthDriver(health::HealthPolicyConfig config, const state::ClusterState& state, const WorkerTable& workers,
               Proposer& proposer, const Clock* clock);
  ~HealthDriver();

  // Leader only.
  void Tick(int64_t now_ms) override;
  void Reset() override;
  void Reconfigure(health::HealthPolicyConfig config);

  // For tests and status: delivery stats per sink name.
  std::map<std::string, health::WebhookSinkStats> SinkStats() const;
  // The nodes the last round evaluated: those with something wrong (a
  // condition, a fenced GPU, a health cordon), not the whole cluster.
  size_t nodes_evaluated() const { return nodes_evaluated_; }

 private:
  health::HealthPolicyInput BuildInput(int64_t wall_ms);
  void Evaluate(int64_t wall_ms);
  void RunSinks(int64_t now_ms);

  health::HealthPolicyConfig config_;
  health::XidCatalogue catalogue_;
  const state::ClusterState& state_;
  const WorkerTable& workers_;
  Proposer& proposer_;
  const Clock* clock_;
  int64_t next_evaluate_ms_ = 0;
  int64_t next_cursor_ms_ = 0;
  uint32_t in_flight_ = 0;  // proposals of this driver not yet settled
  size_t nodes_evaluated_ = 0;
  // Per node: the health_rounds at which it was last seen clear (policy rule 4).
  std::map<std::string, std::optional<uint64_t>> clear_since_;
  struct Sink {
    std::unique_ptr<health::WebhookSink> sink;
    uint64_t committed = 0;  // the cursor last proposed
  };
  std::map<std::string, Sink> sinks_;
  // A sink that could not start (its secret_file or ca_file unreadable) is
  // tried again at this time, not every loop turn (one error a try).
  std::map<std::string, int64_t> sink_retry_ms_;
};

}  // namespace gpool::control
