// DiskGuard: whether a process may write to its data dir now, and when to
// find out whether it may again. A full disk is a mode, not a crash: the
// coordinator and the worker keep serving what needs no write, refuse writes
// with one typed error, and resume by themselves once space returns.
//
// The mode is entered two ways:
//   - before a write (CheckWrite): the file system's free space (statvfs,
//     what an unprivileged process may use) is at or below the reserve. The
//     reserve keeps LevelDB's own needs (memtable flushes, compactions, a new
//     MANIFEST at open) from meeting ENOSPC half-way, where it is hardest to
//     recover from; the check is cached for `stat_interval_ms`, so a burst of
//     writes costs one statvfs;
//   - after a write failed (WriteFailed): any I/O error, whatever the free
//     space says (ENOSPC, EDQUOT, EIO, a read-only remount).
// It is left only by Resumed(), which the owner calls after ResumeDue() said
// to try and a real write then succeeded: free space above the reserve alone
// is not proof (a quota, a read-only file system), a probe write plus the
// owner's own write is.
//
// Errors: every refusal is Unavailable "disk full (<path>, <free> bytes free)"
// (or "data dir <path> is not writable (...)" for a failure that is not about
// space), which the client shows as is and scripts branch on by code.
//
// Pure apart from the injected stat and probe functions (real ones by
// default); it does no logging itself: ShouldLog() says when the owner
// should log, at most once per `log_interval_ms` while the mode lasts.
// Thread-safety: none; one owner thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "protocol/base/clock.h"
#include "protocol/base/status.h"

namespace gpool {

struct DiskSpace {
  uint64_t free_bytes = 0;   // available to unprivileged users (f_bavail)
  uint64_t total_bytes = 0;
};

// statvfs of the file system holding `path`.
Result<DiskSpace> StatDisk(const std::string& path);
// StatDisk's free_bytes alone: what a free-space probe of the worker's
// (health's disk check, the task log retention) reads.
Result<uint64_t> FreeBytes(const std::string& path);
// Writes, fdatasyncs and removes a small file in `dir`: the cheapest proof
// that a write would succeed now. IoError naming the errno otherwise.
Status ProbeWrite(const std::string& dir);
// Whether an error's text is the OS saying "no space" or "quota exceeded"
// (LevelDB and std::filesystem pass strerror through).
bool IsNoSpaceError(const Status& status);
// "disk full (/var/lib/gpool/coordinator, 12288 bytes free)"
std::string DiskFullText(const std::string& path, uint64_t free_bytes);

struct DiskGuardOptions {
  std::string path;                     // the data dir; required
  uint64_t reserve_bytes = 64ull << 20;  // at or below this much free space, writes are refused
  int64_t stat_interval_ms = 100;       // how long one statvfs answer is trusted while healthy
  int64_t retry_interval_ms = 1000;     // how often a full disk is looked at again
  int64_t log_interval_ms = 30'000;     // at most one "still full" log line per interval
  const Clock* clock = &SystemClock::Get();
  // Injected for tests; the real StatDisk and ProbeWrite when empty.
  std::function<Result<DiskSpace>(const std::string&)> stat;
  std::function<Status(const std::string&)> probe;
};

// What ClusterStatus and logs show.
struct DiskReport {
  bool full = false;
  std::string path;
  uint64_t free_bytes = 0;
  int64_t since_ms = 0;  // monotonic time the mode began
  std::string error;     // the refusal's message; empty when healthy
};

class DiskGuard {
 public:
  explicit DiskGuard(DiskGuardOptions options);

  // Ok to write now, or the Unavailable refusal (entering the mode when free
  // space is at or below the reserve).
  Status CheckWrite();
  // A write failed with `error`: enter the mode (if not in it) and return
  // the refusal to give whoever waited on that write.
  Status WriteFailed(const Status& error);
  // In the mode, once per retry interval: true when free space is above the
  // reserve and a probe write succeeded, so the owner should try its own
  // writes again (reopen its store, persist what waits) and then call
  // Resumed() or WriteFailed().
  bool ResumeDue();
  // The owner's writes succeed again: leave the mode.
  void Resumed();
  // In the mode, true at most once per log interval (the first call true).
  bool ShouldLog();

  bool full() const { return full_; }
  Status refusal() const { return refusal_; }
  DiskReport Report() const;
  const std::string& path() const { return options_.path; }

 private:
  Result<DiskSpace> Stat() const;
  void Enter(Status refusal, uint64_t free_bytes);

  DiskGuardOptions options_;
  bool full_ = false;
  bool no_space_ = false;  // the refusal is about space (its text follows the free bytes)
  Status refusal_;
  uint64_t free_bytes_ = 0;
  int64_t since_ms_ = 0;
  bool have_stat_ = false;
  int64_t last_stat_ms_ = 0;
  bool last_stat_full_ = false;
  int64_t next_retry_ms_ = 0;
  bool logged_ = false;
  int64_t next_log_ms_ = 0;
};

}  // namespace gpool
