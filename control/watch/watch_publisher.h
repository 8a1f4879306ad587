// WatchPublisher: the change feed and the watches it feeds, following the log
// (an ApplyListener, control/state/apply_listener.h).
//
// Before each command the feed notes the jobs and nodes it can change; after
// it, their new summaries go to the watches that match. A state replaced
// whole (recovered, or a snapshot from the leader) restarts the feed, and
// every watch re-subscribes from there.
#pragma once

#include "control/state/apply_listener.h"
#include "control/watch/change_feed.h"
#include "control/watch/watch_hub.h"

namespace gpool::control {

class WatchPublisher final : public state::ApplyListener {
 public:
  WatchPublisher(ChangeFeed& feed, WatchHub& watches) : feed_(feed), watches_(watches) {}

  void BeforeApply(const state::ClusterState& state, const state::Command& command) override {
    feed_.Note(state, command);
  }
  void AfterApply(const state::ClusterState& state, uint64_t index, const state::Command& command,
                  const state::ApplyResult& result) override {
    watches_.Publish(feed_.Record(state, index, command, result));
  }
  void AfterRestore(const state::ClusterState& state) override {
    feed_.Reset(state);
    watches_.DropAll();
  }

 private:
  ChangeFeed& feed_;
  WatchHub& watches_;
};

}  // namespace gpool::control
