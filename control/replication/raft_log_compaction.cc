// RaftLog's compaction: a snapshot recorded (inline or as an image file),
// the entries it covers freed off the loop and deleted from the store in
// runs (issue 49: each of these, done at once on the coordinator's loop, held
// it past an election timeout in gpool-bench-scale).
#include <chrono>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "control/log/image_file.h"
#include "control/replication/raft_log.h"
#include "control/replication/stored_snapshot.h"

namespace gpool::replication {
namespace {

// Frees a compaction's entries on a thread of its own: they are the log since
// the last snapshot (about 100 MB in gpool-bench-scale), and freeing them on
// the coordinator's loop took 60-130 ms a snapshot. Inline if no thread starts.
void FreeCompactedOffLoop(std::vector<raft::LogEntry> entries) {
  if (entries.empty()) return;
  try {
    std::thread([dropped = std::move(entries)]() mutable {
      dropped.clear();
      dropped.shrink_to_fit();
    }).detach();
  } catch (const std::system_error&) {
    // `entries` was moved into the lambda only if the thread started.
  }
}

}  // namespace

void RaftLog::TrimCompacted() {
  // A few milliseconds a turn at most: a snapshot's covered entries, deleted
  // all at once, held the loop past an election timeout (storage/log_store.h).
  constexpr size_t kTrimPerTurn = 2048;
  auto trimmed = store_->TrimCompacted(kTrimPerTurn);
  if (!trimmed.ok() && !trim_warned_) {
    trim_warned_ = true;
    spdlog::warn("raft log: deleting compacted entries failed; retried each turn error=\"{}\"",
                 trimmed.status().ToString());
  } else if (trimmed.ok()) {
    trim_warned_ = false;
  }
}

Status RaftLog::SaveSnapshot(uint64_t index, std::string_view data) {
  std::string image = EncodeSnapshotImage(SnapshotImage{directory_.List(), std::string(data)});
  auto snapshot = node_->Compact(index, image);
  FreeCompactedOffLoop(node_->TakeCompacted());
  if (!snapshot.ok()) return snapshot.status();
  GPOOL_RETURN_IF_ERROR(store_->SaveSnapshot(storage::SnapshotMeta{snapshot->index, snapshot->term},
                                             EncodeStoredSnapshot(StoredSnapshot{snapshot->conf, std::move(image)}),
                                             /*sync=*/true));
  if (!options_.snapshot_dir.empty()) RemoveImageFilesExcept(options_.snapshot_dir, "");
  return Status::Ok();
}

Status RaftLog::SaveSnapshotFile(uint64_t index, const std::string& path, uint64_t bytes, const std::string& sha256) {
  if (options_.snapshot_dir.empty()) return Status::FailedPrecondition("this log keeps snapshots inline");
  // Checked before the link, which would replace the file of the snapshot in
  // force were the index that one's.
  const uint64_t current = node_->log().snapshot().index;
  if (index <= current) {
    return Status::FailedPrecondition("snapshot at " + std::to_string(index) + " is not newer than the one at " +
                                      std::to_string(current));
  }
  // Each step timed: this runs on the coordinator's loop, and a slow turn's
  // log (`loop turn slow ... snapshot:NNN`) is read against these.
  using StepClock = std::chrono::steady_clock;
  auto ms_since = [](StepClock::time_point from) {
    return std::chrono::duration<double, std::milli>(StepClock::now() - from).count();
  };
  auto step = StepClock::now();
  GPOOL_RETURN_IF_ERROR(LinkImageFile(path, options_.snapshot_dir, index));
  const double link_ms = ms_since(step);
  const ImageFileRef ref{ImageFileName(index), bytes, sha256};
  std::string image = EncodeSnapshotImage(SnapshotImage{directory_.List(), "", ref});
  const uint64_t entries = index - current;
  step = StepClock::now();
  auto snapshot = node_->Compact(index, image);
  FreeCompactedOffLoop(node_->TakeCompacted());
  const double compact_ms = ms_since(step);
  if (!snapshot.ok()) {
    RemoveImageFilesExcept(options_.snapshot_dir, ImageFileName(current));
    return snapshot.status();
  }
  // A few hundred bytes, where the inline image was the whole state.
  step = StepClock::now();
  GPOOL_RETURN_IF_ERROR(store_->SaveSnapshot(storage::SnapshotMeta{snapshot->index, snapshot->term},
                                             EncodeStoredSnapshot(StoredSnapshot{snapshot->conf, std::move(image)}),
                                             /*sync=*/true));
  const double store_ms = ms_since(step);
  step = StepClock::now();
  RemoveImageFilesExcept(options_.snapshot_dir, ref.name);
  spdlog::info("raft log compacted index={} entries={} link_ms={:.1f} memory_ms={:.1f} store_ms={:.1f} remove_ms={:.1f}",
               index, entries, link_ms, compact_ms, store_ms, ms_since(step));
  return Status::Ok();
}

}  // namespace gpool::replication
