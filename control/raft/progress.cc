#include "control/raft/progress.h"

#include <algorithm>

namespace gpool::raft {

std::string_view ProgressStateName(ProgressState state) {
  switch (state) {
    case ProgressState::kProbe: return "Probe";
    case ProgressState::kReplicate: return "Replicate";
    case ProgressState::kSnapshot: return "Snapshot";
  }
  return "Unknown";
}

void Progress::BecomeProbe() {
  // After a snapshot the follower holds at least the snapshot, so probing
  // below it would only be rejected.
  if (state == ProgressState::kSnapshot) {
    next = std::max(match + 1, pending_snapshot + 1);
  } else {
    next = match + 1;
  }
  state = ProgressState::kProbe;
  probe_sent = false;
  pending_snapshot = 0;
  snapshot_ticks = 0;
  inflights.Reset();
}

void Progress::BecomeReplicate() {
  next = match + 1;
  state = ProgressState::kReplicate;
  probe_sent = false;
  pending_snapshot = 0;
  snapshot_ticks = 0;
  inflights.Reset();
}

void Progress::BecomeSnapshot(uint64_t snapshot_index) {
  state = ProgressState::kSnapshot;
  pending_snapshot = snapshot_index;
  next = snapshot_index + 1;
  probe_sent = false;
  snapshot_ticks = 0;
  inflights.Reset();
}

bool Progress::MaybeUpdate(uint64_t index) {
  bool updated = false;
  if (match < index) {
    match = index;
    updated = true;
    probe_sent = false;
  }
  next = std::max(next, index + 1);
  return updated;
}

bool Progress::MaybeDecrTo(uint64_t rejected, uint64_t match_hint) {
  if (state == ProgressState::kReplicate) {
    // A reject for an index already acknowledged is a late duplicate.
    if (rejected <= match) return false;
    next = match + 1;
    return true;
  }
  // In probe only the answer to the latest probe counts.
  if (next == 0 || next - 1 != rejected) return false;
  next = std::max(std::min(rejected, match_hint + 1), match + 1);
  probe_sent = false;
  return true;
}

void Progress::ForgetMatch(uint64_t last_index) {
  match = 0;
  BecomeProbe();
  next = last_index + 1;
}

void Progress::SentEntries(uint64_t last_index, uint64_t count, uint64_t bytes) {
  switch (state) {
    case ProgressState::kReplicate:
      if (count > 0) {
        next = last_index + 1;
        inflights.Add(last_index, bytes);
      }
      break;
    case ProgressState::kProbe:
      probe_sent = true;
      break;
    case ProgressState::kSnapshot:
      break;
  }
}

bool Progress::IsPaused() const {
  switch (state) {
    case ProgressState::kProbe: return probe_sent;
    case ProgressState::kReplicate: return inflights.Full();
    case ProgressState::kSnapshot: return true;
  }
  return true;
}

}  // namespace gpool::raft
