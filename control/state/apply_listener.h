// ApplyListener: what must stay in step with the state machine as the log
// commits.
//
// Every replica applies the same entries in the same order. What follows them
// beside the state (the change feed and the watches it feeds, the CurveZMQ key
// directory) registers once with the ApplyPipeline (control/apply_pipeline.h)
// rather than being called by name from the coordinator's loop, so a new
// follower of the log is one registration, not an edit of the loop.
#pragma once

#include <cstdint>

#include "control/state/cluster_state.h"
#include "control/state/commands.h"

namespace gpool::state {

class ApplyListener {
 public:
  virtual ~ApplyListener() = default;

  // Before `command` changes `state` (the change feed notes what it touches).
  virtual void BeforeApply(const ClusterState& state, const Command& command) {
    (void)state;
    (void)command;
  }
  // After the entry at `index` was applied, whatever its result.
  virtual void AfterApply(const ClusterState& state, uint64_t index, const Command& command,
                          const ApplyResult& result) = 0;
  // `state` was replaced whole: recovered from the data dir at start, or a
  // snapshot installed from the leader.
  virtual void AfterRestore(const ClusterState& state) = 0;
};

}  // namespace gpool::state
