// Which state version each command needs (state_version.h): the gate the
// leader's ProposalTracker holds while the replicas run different binaries.
#pragma once

#include <cstdint>
#include <string>

#include "control/state/commands.h"
#include "control/state/state_version.h"

namespace gpool::state {

struct StateVersionNeed {
  uint32_t version = 1;  // 1: every replica applies it alike
  std::string what;      // what in the command needs `version`, for the refusal; empty at 1
};

// The lowest state version that applies `body` as this binary does.
StateVersionNeed StateVersionNeeded(const CommandBody& body);

}  // namespace gpool::state
