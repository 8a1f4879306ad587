// What a committed command can change, named before it is applied: the
// jobs and nodes it names, the jobs with tasks on a node it names (a lost
// node ends its tasks), and the nodes a named job's tasks hold (but for a
// plan's jobs: a plan takes only on its binds' nodes). The watch
// feed renders these jobs' and nodes' summaries after the command; the key
// sync re-reads these jobs' task keys. One list for both, so they follow the
// same rules (change_feed_test.cc checks it names every change).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "control/state/cluster_state.h"
#include "control/state/commands.h"

namespace gpool::control {

struct FeedCandidates {
  std::vector<uint64_t> jobs;
  std::vector<std::string> nodes;
};
FeedCandidates CandidatesOf(const state::ClusterState& state, const state::Command& command);

}  // namespace gpool::control
