#include "worker/runner/lease_file.h"

#include <time.h>

#include <charconv>
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

std::string LeasePath(const std::string& data_dir) { return data_dir + "/lease"; }

int64_t MonotonicNowMs() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

Status WriteLease(const std::string& path, int64_t deadline_mono_ms) {
  std::string line = std::string(kMagic) + " deadline_mono_ms=" + std::to_string(deadline_mono_ms);
  if (!BootId().empty()) line += " boot_id=" + BootId();
  // Not synced: a deadline counts only within this boot (the boot id says
  // which), and an fsync per heartbeat would stall the worker on a busy disk.
  return WriteFileAtomic(path, line + "\n", /*sync=*/false);
}

Result<int64_t> RenewLease(const std::string& path, int64_t sent_mono_ms, int64_t lease_ms) {
  const int64_t deadline = sent_mono_ms + lease_ms;
  if (auto current = ReadLease(path); current.ok() && *current >= deadline) return *current;
  GPOOL_RETURN_IF_ERROR(WriteLease(path, deadline));
  return deadline;
}

Result<int64_t> ReadLease(const std::string& path) {
  auto text = ReadWholeFile(path);
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
