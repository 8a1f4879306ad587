// ApplyPipeline: the commit log's output into the state machine, on the
// coordinator's loop thread.
//
// SyncAndApply() group-commits what this turn proposed (one fsync for a
// single replica, a Raft Ready otherwise), applies the entries that committed
// in log order, installs a snapshot a lagging follower receives from its
// leader, settles each entry's proposal with its result, and tells the
// registered listeners (control/state/apply_listener.h). A data dir that
// refuses writes is a mode, not an error (disk_full_mode.h): nothing is
// written until it takes writes again.
//
// RecoverState() is the same path at start, from what the store holds, with
// no listeners: entries are replayed straight into the state, and the
// listeners hear AfterRestore once (Restored) when they are registered.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "control/disk_full_mode.h"
#include "control/log/commit_log.h"
#include "control/proposal_tracker.h"
#include "control/snapshot_schedule.h"
#include "control/state/apply_listener.h"
#include "control/state/cluster_state.h"
#include "protocol/base/clock.h"
#include "protocol/base/status.h"

namespace gpool::control {

// Loads the snapshot and replays the log the commit log recovered.
Status RecoverState(log::CommitLog& log, state::ClusterState& state, SnapshotSchedule& snapshots);

class ApplyPipeline {
 public:
  ApplyPipeline(state::ClusterState& state, SnapshotSchedule& snapshots, log::CommitLog& log, DiskFullMode& disk,
                ProposalTracker& tracker, const Clock& clock = SystemClock::Get())
      : state_(state), snapshots_(snapshots), log_(log), disk_(disk), tracker_(tracker), clock_(clock) {}

  // Listeners hear of every entry in registration order; each outlives the pipeline.
  void Listen(state::ApplyListener* listener) { listeners_.push_back(listener); }
  // Tells every listener the state was replaced (after RecoverState).
  void Restored();

  // Starts one turn of the coordinator's loop. A backlog (a replica
  // catching up: the log hands it over in slices and says come straight back,
  // MsUntilDue 0) is applied for at most kApplyTurnBudget (20 ms) over all of
  // a turn's SyncAndApply calls, at least one slice per turn; the rest waits
  // for the next turn, so peers and clients are served in between. Before
  // the first call, no budget applies.
  void BeginTurn();

  // True when at least one entry was applied. An error here is a state
  // that can no longer follow the log (a snapshot that does not load).
  Result<bool> SyncAndApply();

 private:
  Status Apply(log::Committed committed);
  // Applies one entry; returns its command's name ("" if it did not decode)
  // for the slow-batch log.
  std::string_view ApplyEntry(const storage::LogEntry& entry);

  state::ClusterState& state_;
  SnapshotSchedule& snapshots_;
  log::CommitLog& log_;
  DiskFullMode& disk_;
  ProposalTracker& tracker_;
  const Clock& clock_;
  std::vector<state::ApplyListener*> listeners_;
  int64_t turn_end_ms_ = INT64_MAX;  // when this turn's backlog budget is spent
  bool turn_applied_ = false;        // this turn applied an entry already
};

}  // namespace gpool::control
