// How `gpool job` renders an elastic job's scaling by signal (issue 50): per
// group with scale rules, its rules, bounds, the target the coordinator
// decided, its last change and the cool-down left. `--json` is the reply's
// wire form, which carries the same (GetJobReply.scale).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/messages_client.h"
#include "protocol/scale_rule.h"

namespace gpool {

// One rule in words: "queue-depth: grow above 2 pending, shrink below 1
// (queue batch, step 2)", "gpu-utilisation: grow at 80% busy or more, never
// shrink", "time-window: all replicas inside 08:00-18:00 UTC, the minimum
// outside".
std::string ScaleRuleText(const ScaleRule& rule);

// A change: "1 -> 2 by queue-depth (queue default: 1 pending), 12s ago";
// "none yet" when it never scaled.
std::string ScaleChangeText(const ScaleChange& change, int64_t now_ms);

// The "Scaling" blocks of `gpool job`, one per group in reply.scale, each
// headed by a blank line; "" for a job without scale rules.
std::string FormatJobScaling(const GetJobReply& reply, int64_t now_ms);

}  // namespace gpool
