#include "protocol/base/disk_guard.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace gpool {
namespace {

Status Errno(const std::string& what, int err) {
  return Status::IoError(what + ": " + std::strerror(err));
}

}  // namespace

Result<DiskSpace> StatDisk(const std::string& path) {
  struct statvfs s {};
  if (::statvfs(path.c_str(), &s) != 0) return Errno("statvfs " + path, errno);
  DiskSpace space;
  space.free_bytes = static_cast<uint64_t>(s.f_bavail) * s.f_frsize;
  space.total_bytes = static_cast<uint64_t>(s.f_blocks) * s.f_frsize;
  return space;
}

Result<uint64_t> FreeBytes(const std::string& path) {
  GPOOL_ASSIGN_OR_RETURN(const DiskSpace space, StatDisk(path));
  return space.free_bytes;
}

Status ProbeWrite(const std::string& dir) {
  const std::string path = dir + "/.gpool-write-probe";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("probe write " + path, errno);
  // One page: a file system with no block left refuses it even when it
  // still has inodes for an empty file.
  char page[4096];
  std::memset(page, 'p', sizeof(page));
  Status status;
  size_t done = 0;
  while (done < sizeof(page)) {
    const ssize_t n = ::write(fd, page + done, sizeof(page) - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      status = Errno("probe write " + path, errno);
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (status.ok() && ::fdatasync(fd) != 0) status = Errno("probe fdatasync " + path, errno);
  ::close(fd);
  ::unlink(path.c_str());
  return status;
}

bool IsNoSpaceError(const Status& status) {
  const std::string& m = status.message();
  return m.find(std::strerror(ENOSPC)) != std::string::npos || m.find(std::strerror(EDQUOT)) != std::string::npos;
}

std::string DiskFullText(const std::string& path, uint64_t free_bytes) {
  return "disk full (" + path + ", " + std::to_string(free_bytes) + " bytes free)";
}

DiskGuard::DiskGuard(DiskGuardOptions options) : options_(std::move(options)) {}

Result<DiskSpace> DiskGuard::Stat() const {
  return options_.stat ? options_.stat(options_.path) : StatDisk(options_.path);
}

Status DiskGuard::CheckWrite() {
  if (full_) return refusal_;
  const int64_t now = options_.clock->MonoMs();
  if (have_stat_ && now - last_stat_ms_ < options_.stat_interval_ms && !last_stat_full_) return Status::Ok();
  auto space = Stat();
  have_stat_ = true;
  last_stat_ms_ = now;
  // A statvfs failure says nothing about space: let the write find out.
  last_stat_full_ = space.ok() && space->free_bytes <= options_.reserve_bytes;
  if (!last_stat_full_) return Status::Ok();
  Enter(Status::Unavailable(DiskFullText(options_.path, space->free_bytes)), space->free_bytes);
  no_space_ = true;
  return refusal_;
}

Status DiskGuard::WriteFailed(const Status& error) {
  if (full_) return refusal_;
  auto space = Stat();
  const uint64_t free_bytes = space.ok() ? space->free_bytes : 0;
  const bool no_space = IsNoSpaceError(error) || (space.ok() && free_bytes <= options_.reserve_bytes);
  Enter(Status::Unavailable(no_space ? DiskFullText(options_.path, free_bytes)
                                     : "data dir " + options_.path + " is not writable (" + error.message() + ")"),
        free_bytes);
  no_space_ = no_space;
  return refusal_;
}

void DiskGuard::Enter(Status refusal, uint64_t free_bytes) {
  full_ = true;
  refusal_ = std::move(refusal);
  free_bytes_ = free_bytes;
  since_ms_ = options_.clock->MonoMs();
  next_retry_ms_ = since_ms_ + options_.retry_interval_ms;
  logged_ = false;
}

bool DiskGuard::ResumeDue() {
  if (!full_) return false;
  const int64_t now = options_.clock->MonoMs();
  if (now < next_retry_ms_) return false;
  next_retry_ms_ = now + options_.retry_interval_ms;
  auto space = Stat();
  if (space.ok()) {
    free_bytes_ = space->free_bytes;
    if (no_space_) refusal_ = Status::Unavailable(DiskFullText(options_.path, free_bytes_));
  }
  if (space.ok() && space->free_bytes <= options_.reserve_bytes) return false;
  const auto probe = options_.probe ? options_.probe(options_.path) : ProbeWrite(options_.path);
  return probe.ok();
}

void DiskGuard::Resumed() {
  full_ = false;
  refusal_ = Status::Ok();
  have_stat_ = false;
}

bool DiskGuard::ShouldLog() {
  if (!full_) return false;
  const int64_t now = options_.clock->MonoMs();
  if (logged_ && now < next_log_ms_) return false;
  logged_ = true;
  next_log_ms_ = now + options_.log_interval_ms;
  return true;
}

DiskReport DiskGuard::Report() const {
  DiskReport report;
  report.full = full_;
  report.path = options_.path;
  report.free_bytes = free_bytes_;
  report.since_ms = since_ms_;
  report.error = full_ ? refusal_.message() : std::string();
  return report;
}

}  // namespace gpool
