// SnapshotTaker: the periodic snapshot, when SnapshotSchedule says one is
// due, and the images exports ask for (issue 49).
//
// The state is encoded off the loop thread by a forked child
// (snapshot_fork.h): Tick() starts one when a snapshot is due, and, once the
// child is done (Tick polls it every loop turn, never blocking), saves its
// image through the commit log, which then drops the entries it covers: a
// log that KeepsImageFiles (a replicated coordinator) links the child's file
// and stores a reference, so the loop neither reads nor writes the image; a
// single replica's LocalLog still reads it and stores it inline. The
// loop meanwhile goes on heartbeating and committing. A data dir that refuses
// writes (a full disk: disk_full_mode.h) starts none; a failed write is that
// mode's business too. A child that fails or is killed is started again
// kRetryMs later, while the snapshot is still due. Should fork() itself fail
// (no memory for the page tables), the image is encoded on the loop as
// before: a stall is better than a log that never compacts.
//
// Exports share the child: RequestImage(min_index, done) hands `done` the
// image of the running child when it covers min_index (every write
// acknowledged before the request), else of the next one, started as soon
// as none runs; a child that fails fails them (Unavailable: start again).
// At most one child runs at a time.
//
// Not thread-safe; the coordinator's loop owns it.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "control/disk_full_mode.h"
#include "control/log/commit_log.h"
#include "control/log/image_file_log.h"
#include "control/metrics/metric_sets.h"
#include "control/snapshot_fork.h"
#include "control/snapshot_schedule.h"
#include "control/state/cluster_state.h"

namespace gpool::control {

class SnapshotTaker {
 public:
  static constexpr int64_t kRetryMs = 1'000;
  using ImageReady = std::function<void(Result<std::shared_ptr<ForkedImage>>)>;

  // metrics may be null. A null `fork` encodes on the loop, as before
  // issue 49 (--snapshot-on-loop); RequestImage is then not to be used.
  SnapshotTaker(SnapshotSchedule& schedule, log::CommitLog& log, DiskFullMode& disk, ReplicationMetrics* metrics,
                std::unique_ptr<SnapshotFork> fork)
      : schedule_(schedule),
        log_(log),
        files_(dynamic_cast<log::ImageFileLog*>(&log)),
        disk_(disk),
        metrics_(metrics),
        fork_(std::move(fork)) {}

  // Once a loop turn: collects a finished child, starts one when due.
  void Tick(const state::ClusterState& state, int64_t now_ms);
  // An image of the state at an index >= min_index, for `done` (called from
  // a later Tick, on the loop).
  void RequestImage(uint64_t min_index, ImageReady done);
  // Requests waiting; failed with `why` (this replica stopped leading).
  void DropRequests(const Status& why);

  const SnapshotFork& fork() const { return *fork_; }  // not with a null fork
  size_t waiting() const { return waiting_.size(); }

 private:
  struct Waiter {
    uint64_t min_index;
    ImageReady done;
  };
  void Collect(Result<std::shared_ptr<ForkedImage>> image, int64_t now_ms);
  void Save(uint64_t index, std::string_view image, uint64_t bytes_left);
  void SaveFile(const ForkedImage& file, uint64_t bytes_left);

  SnapshotSchedule& schedule_;
  log::CommitLog& log_;
  log::ImageFileLog* files_;  // null: the log keeps images inline only
  DiskFullMode& disk_;
  ReplicationMetrics* metrics_;
  std::unique_ptr<SnapshotFork> fork_;
  std::vector<Waiter> waiting_;
  int64_t retry_at_ms_ = 0;
  bool for_schedule_ = false;    // the running child was started because a snapshot was due
  uint64_t bytes_at_start_ = 0;  // the schedule's bytes_since() when it was
};

}  // namespace gpool::control
