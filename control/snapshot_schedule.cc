#include "control/snapshot_schedule.h"

namespace gpool::control {

void SnapshotSchedule::Applied(uint64_t index, size_t bytes) {
  if (index <= last_index_) return;  // covered by the snapshot already
  if (index > applied_index_) applied_index_ = index;
  bytes_since_ += bytes;
}

void SnapshotSchedule::Covered(uint64_t index, size_t bytes, uint64_t bytes_left) {
  last_index_ = index;
  if (applied_index_ < index) applied_index_ = index;
  last_bytes_ = bytes;
  bytes_since_ = bytes_left;
}

bool SnapshotSchedule::Due() const {
  // The tolerance keeps 5/3 x 30 at 50 entries, not 51, in floating point.
  constexpr double kSlack = 1e-9;
  if (static_cast<double>(entries_since()) + kSlack < factor_ * static_cast<double>(min_entries_)) return false;
  return static_cast<double>(bytes_since_) + kSlack >= factor_ * log_ratio_ * static_cast<double>(last_bytes_);
}

}  // namespace gpool::control
