#include "worker/runner/lease_file.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "worker/runner/atomic_file.h"

namespace gpool::worker {
namespace {

constexpr std::string_view kMagic = "gpool-lease v1";

// This boot's id, "" where the kernel does not say (then boots are not told apart).
const std::string& BootId() {
  static const std::string id = [] {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string text;
    in >> text;
    return text;
  }();
  return id;
}

std::string Field(const std::string& text, std::string_view key) {
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    if (word.size() > key.size() && word.compare(0, key.size(), key) == 0 && word[key.size()] == '=') {
      return word.substr(key.size() + 1);
    }
  }
  return "";
}

}  // namespace

bool StartRefusedForNoLease(const Status& status) {
  return status.code() == StatusCode::kFailedPrecondition && status.message().rfind(kNoLeaseStart, 0) == 0;
}

std::string LeasePath(const std::string& data_dir) { return data_dir + "/lease"; }

int64_t MonotonicNowMs() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

namespace {

// Every lease is padded to this size, so rewriting one in place never needs
// a new block (below).
constexpr size_t kLeaseBytes = 128;

// Overwrites the existing file's bytes: on a full disk (no block for a new
// file) the lease's own block still takes them, so the node's running tasks
// keep their lease. Not atomic; ReadLease reads until two reads agree.
Status OverwriteInPlace(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError("cannot open " + path + ": " + std::strerror(errno));
  const ssize_t n = ::pwrite(fd, content.data(), content.size(), 0);
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(content.size())) {
    return Status::IoError("cannot overwrite " + path + ": " + std::strerror(n < 0 ? err : ENOSPC));
  }
  return Status::Ok();
}

}  // namespace

Status WriteLease(const std::string& path, int64_t deadline_mono_ms) {
  std::string line = std::string(kMagic) + " deadline_mono_ms=" + std::to_string(deadline_mono_ms);
  if (!BootId().empty()) line += " boot_id=" + BootId();
  if (line.size() + 1 < kLeaseBytes) line.append(kLeaseBytes - 1 - line.size(), ' ');
  line += "\n";
  // Not synced: a deadline counts only within this boot (the boot id says
  // which), and an fsync per heartbeat would stall the worker on a busy disk.
  Status replaced = WriteFileAtomic(path, line, /*sync=*/false);
  if (replaced.ok()) return replaced;
  // A full data dir (docs/operations.md 6.4): the worker keeps its tasks, so
  // their lease must still be renewed.
  Status overwritten = OverwriteInPlace(path, line);
  return overwritten.ok() ? Status::Ok() : replaced;
}

Result<int64_t> RenewLease(const std::string& path, int64_t sent_mono_ms, int64_t lease_ms) {
  const int64_t deadline = sent_mono_ms + lease_ms;
  if (auto current = ReadLease(path); current.ok() && *current >= deadline) return *current;
  GPOOL_RETURN_IF_ERROR(WriteLease(path, deadline));
  return deadline;
}

Result<int64_t> ReadLease(const std::string& path) {
  auto text = ReadWholeFile(path);
  // A lease rewritten in place (WriteLease on a full disk) could be read
  // half-written: read until two reads agree.
  for (int i = 0; i < 3 && text.ok(); ++i) {
    auto again = ReadWholeFile(path);
    if (!again.ok() || *again == *text) break;
    text = std::move(again);
  }
  if (!text.ok()) return text.status();
  if (text->compare(0, kMagic.size(), kMagic) != 0) return Status::Malformed(path + " is not a gpool lease");
  const std::string deadline = Field(*text, "deadline_mono_ms");
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(deadline.data(), deadline.data() + deadline.size(), value);
  if (deadline.empty() || ec != std::errc() || end != deadline.data() + deadline.size()) {
    return Status::Malformed(path + ": no deadline_mono_ms");
  }
  const std::string boot = Field(*text, "boot_id");
  if (!boot.empty() && !BootId().empty() && boot != BootId()) {
    return Status::FailedPrecondition(path + " was written before the machine last booted");
  }
  return value;
}

Status CheckLeaseKeepingLast(const std::string& path, int64_t now_mono_ms, int64_t* known_deadline) {
  auto read = ReadLease(path);
  if (read.ok()) *known_deadline = *read;  // a deadline moved back (by hand) counts
  if (now_mono_ms < *known_deadline) return Status::Ok();
  if (!read.ok()) return read.status();
  return Status::FailedPrecondition("node lease expired " + std::to_string(now_mono_ms - *known_deadline) +
                                    " ms ago");
}

Status CheckLease(const std::string& path, int64_t now_mono_ms) {
  auto deadline = ReadLease(path);
  if (!deadline.ok()) return deadline.status();
  if (now_mono_ms >= *deadline) {
    return Status::FailedPrecondition("node lease expired " + std::to_string(now_mono_ms - *deadline) +
                                      " ms ago");
  }
  return Status::Ok();
}

}  // namespace gpool::worker
