// Named scheduler configurations for gpool-sim's --policy.
//
// "default" is the coordinator's default configuration (SchedulerConfig{},
// what an empty config file gives). The others are the placement policies
// of the FGD paper's experiment plus gpool's own fragmentation strategy:
// each is the production scheduler with one node-order strategy, every
// feasible node scored, and nothing that experiment has no notion of (CPU
// kept back for free GPUs, reservations, preemption).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "control/scheduler/config.h"
#include "protocol/base/status.h"

namespace gpool::sim {

// In the order the comparison table prints them.
const std::vector<std::string>& PaperPolicies();
Result<scheduler::SchedulerConfig> PolicyConfig(std::string_view name);

}  // namespace gpool::sim
