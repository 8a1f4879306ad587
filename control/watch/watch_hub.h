// WatchHub: the serving leader's watches (docs/protocol.md 7.19). Opens a
// watch with its first reply (the changes since the client's position, from
// the ChangeFeed, or the current state), pushes each later change to the
// watches it matches as a WatchUpdate (one per command, numbered per watch),
// renews and expires watches, and drops them all when leadership is lost.
//
// Matching uses indexes, never a walk of every watch (issue 49): a job
// change looks up the watches of that job, the `jobs` watches of its user,
// those of its queue and the unfiltered `jobs` watches (one list), and
// keeps those whose caller may read the job (decided once per caller per
// change); a node change looks up the `nodes` watches of that node and the
// unfiltered ones. Events, read from the state's event stream each loop
// turn, go to the `events` watches.
//
// Encoding: each change's item is encoded once, by the feed; a push's
// items block is assembled once for every watch that gets the same changes,
// and each watch's frame is that block behind its own watch_id and seq
// (watch_frames.h), byte for byte what encoding the WatchUpdate would give.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <unordered_map>

#include "control/authz.h"
#include "control/leader_service.h"
#include "control/ports.h"
#include "control/watch/change_feed.h"
#include "control/watch/watch_frames.h"
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
  // Items blocks encoded by pushes so far: one per distinct set of items
  // per change or turn, however many watches it went to.
  uint64_t blocks_encoded() const { return blocks_encoded_; }

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
    std::string audience;      // kJobs: equal for callers Authorize treats alike (memoised per change)
    uint64_t seq = 0;
    uint64_t position = 0;     // events: the last seq pushed
    int64_t expires_ms = 0;
  };

  Status Parse(const Watch& request, Entry& entry) const;
  bool MayRead(Entry& entry, const std::string& user, const std::string& queue, uint64_t job) const;
  bool Matches(Entry& entry, const FeedChange& change) const;
  WatchItems Snapshot(Entry& entry) const;
  void Push(Entry& entry, uint64_t position, const WatchUpdateEncoder& encoder, std::string_view items_block);
  void Index(const Entry& entry);
  void Unindex(const Entry& entry);
  using WatchList = std::map<uint64_t, Entry*>;  // by watch id; entries live in watches_
  // `jobs` watches by their caller's audience: whether a job may be read is
  // asked once per audience and change, not once per watch.
  using AudienceLists = std::unordered_map<std::string, WatchList>;
  // The changes (indexes among those published) for each list of watches
  // they concern; every watch of a list gets the same items.
  struct FanOut {
    std::vector<std::pair<const WatchList*, std::vector<uint32_t>>> lists;
    std::unordered_map<const WatchList*, size_t> at;
    void Add(const WatchList& list, uint32_t change);
  };
  void MatchChange(const FeedChange& change, uint32_t at, FanOut& out);
  void Erase(std::map<uint64_t, Entry>::iterator it);

  WatchHubOptions options_;
  const state::ClusterState& state_;
  const ChangeFeed& feed_;
  Outbox& outbox_;
  Proposer& proposer_;
  std::map<uint64_t, Entry> watches_;
  // Each watch is in exactly one list: kJob by its job; kJobs unfiltered,
  // by user or by queue, then by audience; kNodes all or by node; kEvents.
  std::unordered_map<uint64_t, WatchList> by_job_;
  AudienceLists all_jobs_;
  std::unordered_map<std::string, AudienceLists> jobs_by_user_;
  std::unordered_map<std::string, AudienceLists> jobs_by_queue_;
  WatchList all_nodes_;
  std::unordered_map<std::string, WatchList> nodes_by_name_;
  // kEvents watch ids, read from the event stream each turn (Tick): apart,
  // so a turn does not walk every broad watch (10,000 of them cost the loop
  // a millisecond a turn, and the fan-out rounds their slowest tenth).
  std::set<uint64_t> event_watches_;
  std::unordered_map<std::string, size_t> per_peer_;
  std::unordered_map<std::string, size_t> per_user_;  // non-admin callers' watches
  size_t non_admin_ = 0;                               // their sum
  uint64_t next_id_ = 1;
  uint64_t pushes_ = 0;
  uint64_t blocks_encoded_ = 0;
  int64_t next_expiry_ms_ = 0;
};

}  // namespace gpool::control
