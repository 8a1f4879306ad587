#include "control/disk_full_mode.h"

#include <utility>

#include <spdlog/spdlog.h>

namespace gpool::control {

DiskFullMode::DiskFullMode(DiskGuardOptions options, storage::LevelDbStore& kv, storage::LogStore& store)
    : guard_(std::move(options)), kv_(kv), store_(store) {}

Status DiskFullMode::CheckWrite() {
  const bool was_full = guard_.full();
  Status status = guard_.CheckWrite();
  if (!was_full && guard_.full()) Entered("free space at or below the reserve", status);
  return status;
}

Status DiskFullMode::WriteFailed(const Status& error, const std::string& what) {
  const bool was_full = guard_.full();
  Status refusal = guard_.WriteFailed(error);
  if (!was_full) Entered(what, error);
  return refusal;
}

void DiskFullMode::Entered(const std::string& what, const Status& error) {
  const DiskReport report = guard_.Report();
  spdlog::error("data dir refuses writes: serving reads and status, refusing writes until it takes them again "
                "path={} free_bytes={} cause=\"{}\" error=\"{}\"",
                report.path, report.free_bytes, what, error.ToString());
  (void)guard_.ShouldLog();  // that was this interval's line
}

void DiskFullMode::Tick() {
  if (!guard_.full()) return;
  if (guard_.ShouldLog()) {
    const DiskReport report = guard_.Report();
    spdlog::warn("data dir still refuses writes path={} free_bytes={} error=\"{}\"", report.path,
                 report.free_bytes, report.error);
  }
  if (!guard_.ResumeDue()) return;
  // The disk takes a probe write: reopen the store (LevelDB refuses every
  // write after a failed one until reopened, and a read-only copy in memory
  // must move back onto the disk), re-read the log's positions, and let the
  // log persist what it owes. Any failure: still in the mode, tried again
  // next interval.
  Status status = kv_.Reopen();
  if (status.ok()) status = store_.Reload();
  if (status.ok() && log_ != nullptr) status = log_->ResumeWrites();
  if (!status.ok()) {
    spdlog::warn("data dir takes a probe write but the store does not yet path={} error=\"{}\"", guard_.path(),
                 status.ToString());
    return;
  }
  const DiskReport report = guard_.Report();
  guard_.Resumed();
  spdlog::info("data dir takes writes again: writes resumed path={} free_bytes={}", report.path, report.free_bytes);
}

}  // namespace gpool::control
