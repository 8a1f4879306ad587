// Ready: one batch of work the Raft core hands to the actor around it.
//
// The actor handles a Ready in this order, then calls RawNode::Advance:
//   1. persist `snapshot` (if any), then `entries` and `hard_state`,
//      atomically enough that a crash never leaves the hard state ahead of
//      the entries (storage::LogStore::SaveSnapshot, then LogStore::Save);
//   2. send `messages` (only now: a vote or an acknowledgement must not
//      leave before the state it promises is durable);
//   3. apply `snapshot` to the state machine, then `committed_entries` in order;
//   4. serve the reads in `read_states` (the state machine has applied their
//      index once step 3 is done).
// `soft_state` is informational (leader changes) and may be read any time.
//
// Thread-safety: a plain value.
#pragma once

#include <optional>
#include <vector>

#include "control/raft/messages.h"
#include "control/raft/state.h"
#include "storage/log_types.h"

namespace gpool::raft {

struct Ready {
  std::optional<SoftState> soft_state;         // set when the leader or role changed
  std::optional<storage::HardState> hard_state;  // set when term, vote or commit changed
  // A snapshot received from the leader: persist it, drop the log it covers,
  // and restore the state machine from it.
  std::optional<Snapshot> snapshot;
  // Entries to persist. The first may overwrite durable entries at the same
  // index: LogStore::Append drops the old suffix (Raft's conflict rule).
  std::vector<LogEntry> entries;
  // Entries to apply, in index order; they are covered by the durable log
  // once `entries` are persisted. See entry.h for what their data means.
  std::vector<LogEntry> committed_entries;
  std::vector<Message> messages;   // send after persisting
  std::vector<ReadState> read_states;

  bool empty() const {
    return !soft_state && !hard_state && !snapshot && entries.empty() && committed_entries.empty() &&
           messages.empty() && read_states.empty();
  }
};

}  // namespace gpool::raft
