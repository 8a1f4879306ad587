// KeySync: the CurveZMQ key directory kept in step with the committed state.
//
// Who may connect is part of the replicated state: users' keys, nodes' key
// bindings, the exec keys of the tasks that are bound or running (derived
// from their job's secret and their identity, security/task_exec_key.h).
// Every replica applies the same entries, so
// whichever one leads next (or answers with NotLeader meanwhile) admits the
// same keys. Applied() follows one committed command; SyncAll() rebuilds
// everything from the state (at start, after a snapshot is installed, and
// when leadership changes hands).
//
// A task's key is admitted while it is bound or running and dropped when it
// ends, is requeued (the next attempt has another key) or its job is
// forgotten: before each command KeySync notes the jobs it can change (the
// CandidatesOf, control/state/command_candidates.h, so both follow the same list), and after it
// re-reads those jobs' tasks.
//
// Not thread-safe: the coordinator's loop calls it.
#pragma once

#include <cstdint>
#include <vector>

#include "control/security/key_directory.h"
#include "control/state/apply_listener.h"
#include "control/state/cluster_state.h"
#include "control/state/commands.h"

namespace gpool::control {

class KeySync final : public state::ApplyListener {
 public:
  // keys: null on an insecure cluster, where every call does nothing.
  // admin_key_configured: --admin-key was given, so bootstrap never opens.
  KeySync(KeyDirectory* keys, bool admin_key_configured) : keys_(keys), admin_key_configured_(admin_key_configured) {}

  void SyncAll(const state::ClusterState& state);
  // Note before applying `command`, Applied after: the jobs whose tasks'
  // keys it may change. Applied alone re-reads the jobs it can name from the
  // command itself.
  void Note(const state::ClusterState& state, const state::Command& command);
  void Applied(const state::Command& command, const state::ApplyResult& result, const state::ClusterState& state);

  // ApplyListener: the same, as the coordinator's apply pipeline calls them.
  void BeforeApply(const state::ClusterState& state, const state::Command& command) override {
    Note(state, command);
  }
  void AfterApply(const state::ClusterState& state, uint64_t index, const state::Command& command,
                  const state::ApplyResult& result) override {
    (void)index;
    Applied(command, result, state);
  }
  void AfterRestore(const state::ClusterState& state) override { SyncAll(state); }

 private:
  void SyncTasks(const state::ClusterState& state);
  void SyncJobTasks(const state::ClusterState& state, uint64_t job);
  void SyncUsers(const state::ClusterState& state);

  KeyDirectory* keys_;
  bool admin_key_configured_;
  std::vector<uint64_t> noted_jobs_;  // Note's, for the next Applied
};

}  // namespace gpool::control
