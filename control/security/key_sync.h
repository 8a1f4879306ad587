// KeySync: the CurveZMQ key directory kept in step with the committed state.
//
// Who may connect is part of the replicated state: users' keys, nodes' key
// bindings, jobs' exec keys. Every replica applies the same entries, so
// whichever one leads next (or answers with NotLeader meanwhile) admits the
// same keys. Applied() follows one committed command; SyncAll() rebuilds
// everything from the state (at start, after a snapshot is installed, and
// when leadership changes hands).
//
// Not thread-safe: the coordinator's loop calls it.
#pragma once

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
  void Applied(const state::Command& command, const state::ApplyResult& result, const state::ClusterState& state);

  // ApplyListener: the same, as the coordinator's apply pipeline calls them.
  void AfterApply(const state::ClusterState& state, uint64_t index, const state::Command& command,
                  const state::ApplyResult& result) override {
    (void)index;
    Applied(command, result, state);
  }
  void AfterRestore(const state::ClusterState& state) override { SyncAll(state); }

 private:
  void SyncJobs(const state::ClusterState& state);
  void SyncUsers(const state::ClusterState& state);

  KeyDirectory* keys_;
  bool admin_key_configured_;
};

}  // namespace gpool::control
