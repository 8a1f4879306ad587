// TaskLogJanitor: which finished tasks' logs a node keeps.
//
// Each task's output goes to <log_dir>/<job>.<index>.<attempt>.log, with
// ".log.1" and ".log.dropped" beside it once capped (log_cap.h). The worker
// used to leave them all for the operator to delete. A node that runs short
// tasks writes tens of thousands a day (gpool-bench-scale's busiest node: 28
// a second), and the data disk then runs out of inodes or bytes. The binds
// are then refused (disk full), and the node is lost to the cluster for
// history nobody reads: once the coordinator forgets a job (after a week, or
// past the newest 100,000), `gpool logs` cannot reach its logs.
//
// A pass over log_dir starts every kPassEveryMs, or kBusyPassEveryMs after a
// pass that had to remove logs past a limit other than the age (a node
// writing logs faster than a minute's worth of its limit; gpool-bench-scale's
// busiest simulated node wrote 180 a second). Each Step reads at most
// kEntriesPerStep directory entries and removes at most kRemovalsPerStep
// logs, so a directory of millions of files never holds the worker's loop
// for long. A task's log (its .1 and .dropped too) is removed when its task
// is not live (the caller's predicate: pending, running, or its exit not yet
// acknowledged) and
//   - nothing has written it for more than max_age_ms, or
//   - max_logs newer logs of tasks that are not live exist, or
//   - it and the newer ones hold more than max_bytes between them, or
//   - the disk is short of space: when the log directory's file system has
//     less than min_free_bytes free at the end of a pass, the oldest go
//     until what they free covers the shortfall. A pass starts early (at
//     most every kPressureCheckEveryMs) when the disk is short.
// The pass keeps the newest logs it has seen in a set bounded by max_logs
// and max_bytes. A log pushed out of that set is older than max_logs others
// (or than max_bytes of others), so it is past the cap whatever the rest of
// the pass finds; its memory stays bounded by max_logs however large the
// directory (with the age alone, nothing is held).
// What capping leaves beside a log (".log.1", ".log.dropped") goes with it,
// and also alone, once its task is not live and its ".log" is gone (removed
// by hand, or a worker stopped between the removals): no limit counts such
// an orphan, so nothing else would ever remove it.
// Files not named like a task's log are never touched.
//
// Thread-safety: none; call from the runner's thread.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <spdlog/logger.h>

#include "protocol/base/clock.h"
#include "protocol/base/ids.h"
#include "protocol/base/status.h"

namespace gpool::worker {

struct TaskLogRetention {
  int64_t max_age_ms = int64_t{7} * 24 * 3600 * 1000;  // 0: logs of any age are kept
  size_t max_logs = 10'000;                            // 0: no limit on their number
  uint64_t max_bytes = 0;                              // 0: no limit on their bytes
  uint64_t min_free_bytes = 0;                         // 0: free space is not looked at
  bool Enabled() const { return max_age_ms > 0 || KeepsNewest(); }
  // Whether a pass needs the newest logs in order (every limit but the age).
  bool KeepsNewest() const { return max_logs > 0 || max_bytes > 0 || min_free_bytes > 0; }
};

// "17.0.2.log" -> job 17, index 0, attempt 2; nullopt for any other name
// (".log.1", ".hostfile", a name with a sign, a space or too many digits).
std::optional<TaskId> ParseTaskLogName(std::string_view file_name);

// "17.0.2.log.1" or "17.0.2.log.dropped" -> job 17, index 0, attempt 2:
// what capping leaves beside a task's log; nullopt for any other name.
std::optional<TaskId> ParseCappedLogName(std::string_view file_name);

class TaskLogJanitor {
 public:
  using LivePredicate = std::function<bool(const TaskId&)>;

  static constexpr int64_t kPassEveryMs = 60'000;
  static constexpr int64_t kBusyPassEveryMs = 5'000;
  static constexpr size_t kEntriesPerStep = 1024;
  static constexpr size_t kRemovalsPerStep = 256;
  static constexpr int64_t kPressureCheckEveryMs = 5'000;
  // Free bytes of the file system holding a path (what an unprivileged
  // writer can still use).
  using FreeBytesProbe = std::function<Result<uint64_t>(const std::string& path)>;

  struct Totals {
    uint64_t passes = 0;         // passes completed
    uint64_t removed_logs = 0;   // since start
    uint64_t removed_bytes = 0;  // the logs' own bytes, .1 included
    uint64_t kept_logs = 0;      // logs of tasks not live that the last completed pass kept
    uint64_t kept_bytes = 0;
  };

  // `clock` (required) gives the wall time logs' ages are measured against
  // and the monotonic time passes are spaced by; the first pass starts at
  // the first Step.
  // `free_bytes`: null reads the file system (StatDisk, disk_guard.h).
  TaskLogJanitor(std::string log_dir, TaskLogRetention retention, const Clock* clock,
                 std::shared_ptr<spdlog::logger> logger, FreeBytesProbe free_bytes = nullptr);

  // One bounded step of the pass under way, or nothing until the next is due.
  // `live` is asked for every log read and again before it is removed.
  void Step(const LivePredicate& live);
  bool pass_in_progress() const { return in_pass_; }
  // When the next Step may do something (monotonic ms): at once while a
  // pass is under way, else the next pass or free-space check.
  int64_t NextStepMs() const;
  const Totals& totals() const { return totals_; }

 private:
  enum Reason { kAge, kCount, kBytes, kDiskShort, kOrphan, kReasons };
  struct Log {
    TaskId task;
    std::string path;  // the .log (an orphan: the .log.1 or .log.dropped itself)
    uint64_t bytes = 0;  // the .log's and the .log.1's
    bool rotated = false;  // a .log.1 was there (and so maybe a .log.dropped)
    Reason reason = kAge;
  };

  void Read(const LivePredicate& live);
  // A .log.1 or .log.dropped read: doomed when its .log is gone.
  void ReadCapped(const std::filesystem::path& path, const LivePredicate& live);
  void Consider(Log log, int64_t mtime_ms);
  void Doom(Log log, Reason reason);
  void Remove(const LivePredicate& live);
  // Once the directory is read: the oldest kept logs doomed while the disk
  // is short of min_free_bytes.
  void RelieveDisk();
  void DoomOldestKept(Reason reason);
  bool DiskShort();
  void EndPass();

  std::string log_dir_;
  TaskLogRetention retention_;
  const Clock* clock_;
  std::shared_ptr<spdlog::logger> log_;
  FreeBytesProbe free_bytes_;
  bool in_pass_ = false;
  int64_t next_pressure_check_ms_ = 0;
  uint64_t doomed_bytes_ = 0;  // of the logs doomed and not yet removed
  int64_t next_pass_ms_ = 0;
  int64_t pass_started_ms_ = 0;
  int64_t pass_wall_ms_ = 0;  // the wall time ages are measured against in this pass
  std::optional<std::filesystem::directory_iterator> it_;
  std::multimap<int64_t, Log> kept_;  // by last write (ms): the newest logs seen in this pass
  uint64_t kept_bytes_ = 0;
  uint64_t kept_count_ = 0;  // kept_.size(), or the count alone when no order is needed
  std::deque<Log> doomed_;
  uint64_t pass_removed_[kReasons] = {};
  uint64_t pass_removed_bytes_ = 0;
  uint64_t pass_errors_ = 0;
  std::string first_error_;
  Totals totals_;
};

}  // namespace gpool::worker
