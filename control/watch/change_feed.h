// ChangeFeed: what each committed command changed, as the summaries clients
// watch (docs/protocol.md 7.19), kept on every replica so a watch resumes
// on whichever one leads next.
//
// Before a command is applied, Note() lists the jobs and nodes it can change
// (the command names them, or they have tasks on a node it names: a lost
// node ends its tasks). After, Record() renders each one's summary and keeps
// it as a change at the command's log index if it differs from the last
// summary recorded for it, so a watcher sees each state once. Every replica
// applies the same commands at the same indexes and so records the same
// changes: a position (a log index) means the same on all of them. A
// property test checks that Note() names every job and node whose summary a
// command changes (change_feed_test.cc).
//
// History is bounded (the newest `capacity` changes) and starts when the
// process starts or installs a snapshot (Reset): a watcher asking for
// changes from before that gets the current state instead.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <map>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "control/state/cluster_state.h"
#include "control/state/command_candidates.h"
#include "control/state/commands.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_watch.h"

namespace gpool::control {

struct FeedChange {
  uint64_t position = 0;  // the log index of the command that made it
  uint64_t job = 0;       // set for a job change
  std::string node;       // set for a node change
  std::string user;       // the job's owner and queue, for filters and permissions
  std::string queue;
  // One or the other: a change is a job's or a node's, and the feed keeps
  // many, so it holds only the summary it has.
  std::variant<JobSummary, NodeSummary> summary;
  const JobSummary& job_summary() const { return std::get<JobSummary>(summary); }
  const NodeSummary& node_summary() const { return std::get<NodeSummary>(summary); }

  // The summary as a watch item's msgpack bytes, encoded on first use and
  // then kept: every push that carries the change splices these same bytes
  // (watch_frames.h). Not at Record: a replica without watches never
  // encodes, and the feed costs a plan less than its apply (issue 49).
  const std::string& encoded() const;
  mutable std::string encoded_cache;  // encoded()'s; left out of initialisers
};


class ChangeFeed {
 public:
  explicit ChangeFeed(size_t capacity = 100'000) : capacity_(capacity) {}

  // Call before applying the command at `index`, then Record after.
  void Note(const state::ClusterState& state, const state::Command& command);
  // Returns how many changes it appended (the last ones of history()).
  size_t Record(const state::ClusterState& state, uint64_t index, const state::Command& command,
                const state::ApplyResult& result);
  // The state was replaced (started, or a snapshot installed): history
  // starts again at its applied index.
  void Reset(const state::ClusterState& state);

  // The changes after `after`, oldest first, when history covers them:
  // after >= first_position() - 1. nullopt otherwise.
  std::optional<std::vector<const FeedChange*>> Since(uint64_t after) const;
  const std::deque<FeedChange>& history() const { return history_; }
  // The position history is complete from (exclusive): changes after it
  // are all kept, until they fall off the end.
  uint64_t covered_after() const { return covered_after_; }
  uint64_t position() const { return position_; }

 private:
  // A new change at the back of history, filled in place (a change is
  // large: building it aside and moving it in cost the feed a fifth).
  FeedChange& Append();
  void Trim();  // drops the oldest past capacity

  size_t capacity_;
  FeedCandidates noted_;
  std::deque<FeedChange> history_;
  uint64_t covered_after_ = 0;
  uint64_t position_ = 0;  // the last index recorded
  // Per job and node: the fingerprint of the last summary recorded, and the
  // last position that rendered it. The latter drops a candidate a command
  // names twice (a plan binds eight tasks to a node) in the one lookup each
  // candidate needs anyway, instead of sorting the names first.
  struct Printed {
    size_t print = 0;
    uint64_t rendered_at = 0;  // 0: never recorded
  };
  // Ordered, not hashed: one entry per retained job, and a hash table of
  // them rehashed all of it inside a SubmitJob's apply each time it crossed
  // its load factor (issue 49: 100-360 ms applies at 10,000 GPUs).
  std::map<uint64_t, Printed> job_prints_;
  std::unordered_map<std::string, Printed> node_prints_;
};

// The summaries a watch carries, rendered deterministically (no wall clock):
// every replica renders the same bytes for the same state.
JobSummary WatchJobSummary(const state::JobRecord& job);
NodeSummary WatchNodeSummary(const state::ClusterState& state, const state::NodeRecord& node);

}  // namespace gpool::control
