// WatchHub: the serving leader's watches (docs/protocol.md 7.19). Opens a
// watch with its first reply (the changes since the client's position, from
// the ChangeFeed, or the current state), pushes each later change to the
// watches it matches as a WatchUpdate (one per command, numbered per watch),
// renews and expires watches, and drops them all when leadership is lost.
//
// Matching: a job change goes to the watches of that job (an index by job
// id, so 10,000 single-job watchers cost one lookup per change) and to the
// `jobs` watches whose filter it passes and whose caller may read the job;
// a node change to the `nodes` watches; events, read from the state's event
// stream each loop turn, to the `events` watches.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "control/authz.h"
#include "control/leader_service.h"
#include "control/ports.h"
#include "control/watch/change_feed.h"
#include "protocol/base/status.h"
#include "protocol/messages_watch.h"

namespace gpool::control {

struct WatchHubOptions {
  size_t max_per_peer = 1000;
  size_t max_total = 100'000;
  // Per caller (a user, a job's exec key, ...), over all its connections:
  // one member opened all 100,000 slots in 5 s and every other user's
  // `gpool wait` failed (issue 48, finding 6). Admins (manage-users) are not
  // held to it, but only they may take the last `admin_reserve` slots, so
  // no number of other callers leaves admins without watches.
  size_t max_per_user = 1000;
  size_t admin_reserve = 1000;
  int64_t lease_ms = 30'000;       // a watch not renewed for this long is dropped
  size_t max_reset_jobs = 10'000;  // a `jobs` snapshot holds the newest this many unfinished jobs
  size_t max_events = 1'000;       // events in a reply or a push at most
  size_t max_replay = 10'000;      // a replay longer than this is answered with a snapshot
};

class WatchHub : public LeaderService {
 public:
  WatchHub(WatchHubOptions options, const state::ClusterState& state, const ChangeFeed& feed, Outbox& outbox,
           Proposer& proposer);

  // Call after the read barrier. The reply is the caller's to send, before
  // any push to the new watch.
  Result<WatchReply> Open(const std::string& peer, const Watch& request, const Actor& actor, int64_t now_ms);
  WatchRenewReply Renew(const std::string& peer, const WatchRenew& request, int64_t now_ms);
  void Close(const std::string& peer, uint64_t watch_id);

  // After each applied command: pushes the feed's newest `appended` changes.
  void Publish(size_t appended);
  // Each loop turn: pushes new events and drops expired watches.
  void Tick(int64_t now_ms) override;
  void Reset() override { DropAll(); }  // a new leadership: every watch re-subscribes
  // Leadership lost (or the state replaced): every watch goes; clients
  // re-create them where they find the leader.
  void DropAll();

  size_t size() const { return watches_.size(); }
  size_t held_by(const std::string& caller) const;
  uint64_t pushes() const { return pushes_; }

 private:
  enum class Topic { kJob, kJobs, kNodes, kEvents };
  struct Entry {
    uint64_t id = 0;
    std::string peer;
    std::string owner;         // the caller it counts against (per_user_); "" for an admin
    Topic topic = Topic::kJob;
    uint64_t job = 0;          // kJob
    std::string filter_kind;   // kJobs: "", "user" or "queue"
    std::string filter_value;  // kJobs: the user or queue; kNodes: a node or ""
    Actor actor;               // user pointer refreshed from the state on use
    bool state_user = false;   // actor.user is a committed record (not the --admin-key's)
    uint64_t seq = 0;
    uint64_t position = 0;     // events: the last seq pushed
    int64_t expires_ms = 0;
  };

  Status Parse(const Watch& request, Entry& entry) const;
  bool MayRead(Entry& entry, const std::string& user, const std::string& queue, uint64_t job) const;
  bool Matches(Entry& entry, const FeedChange& change) const;
  WatchItems Snapshot(Entry& entry) const;
  void Push(Entry& entry, uint64_t position, WatchItems items);
  void Erase(std::map<uint64_t, Entry>::iterator it);

  WatchHubOptions options_;
  const state::ClusterState& state_;
  const ChangeFeed& feed_;
  Outbox& outbox_;
  Proposer& proposer_;
  std::map<uint64_t, Entry> watches_;
  std::unordered_multimap<uint64_t, uint64_t> by_job_;  // job id -> kJob watch ids
  std::set<uint64_t> broad_;                            // kJobs and kNodes watch ids, matched per change
  // kEvents watch ids, read from the event stream each turn (Tick): apart,
  // so a turn does not walk every broad watch (10,000 of them cost the loop
  // a millisecond a turn, and the fan-out rounds their slowest tenth).
  std::set<uint64_t> event_watches_;
  std::unordered_map<std::string, size_t> per_peer_;
  std::unordered_map<std::string, size_t> per_user_;  // non-admin callers' watches
  size_t non_admin_ = 0;                               // their sum
  uint64_t next_id_ = 1;
  uint64_t pushes_ = 0;
  int64_t next_expiry_ms_ = 0;
};

}  // namespace gpool::control
