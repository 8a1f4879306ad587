// The scale rules' arithmetic (protocol/scale_rule.h), apart from where the
// signals come from: pure, so every trigger, the cool-down and the bounds
// are tested alone (scale_decision_test.cc). The leader's ScaleDriver
// gathers the signals and commits what this decides.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "protocol/scale_rule.h"

namespace gpool::state {

struct ScaleSignals {
  uint32_t min = 0;             // the group's minimum replicas
  uint32_t max = 0;             // its replicas
  uint32_t current = 0;         // its committed target
  int64_t now_ms = 0;           // wall clock (UTC), for time windows and the cool-down
  int64_t last_scaled_ms = 0;   // when its job's target last changed; 0: never
  // Jobs pending in a queue, for queue-depth rules (`queue` already resolved
  // to the job's own when the rule names none).
  std::function<uint64_t(const std::string& queue)> queue_depth;
  // Mean utilisation of the GPUs its running replicas hold; nullopt when
  // none of them is measured.
  std::optional<uint32_t> gpu_util_pct;
};

struct ScaleDecision {
  uint32_t target = 0;  // equal to current: no change
  std::string trigger;  // the rule that set the target
  std::string message;  // what it saw ("queue default: 5 pending, above 2")
  bool cooling = false; // a change was wanted but the cool-down holds it back
};

// `own_queue` stands in for a queue-depth rule's empty `queue`.
ScaleDecision DecideScale(const ScaleSpec& spec, const ScaleSignals& signals, const std::string& own_queue);

}  // namespace gpool::state
