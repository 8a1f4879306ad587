#include "worker/runner/task_log_janitor.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <charconv>
#include <system_error>
#include <utility>

#include <spdlog/spdlog.h>

#include "protocol/base/disk_guard.h"

namespace gpool::worker {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kLogSuffix = ".log";
constexpr std::string_view kCappedSuffixes[] = {".log.1", ".log.dropped"};

// One decimal field of a log's name: digits only, no sign, no leading space.
template <typename T>
bool ParseField(std::string_view text, T& out) {
  if (text.empty() || text.size() > 20) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

int64_t MtimeMs(const struct stat& st) {
  return int64_t{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1'000'000;
}

}  // namespace

std::optional<TaskId> ParseTaskLogName(std::string_view name) {
  if (name.size() <= kLogSuffix.size() || !name.ends_with(kLogSuffix)) return std::nullopt;
  std::string_view stem = name.substr(0, name.size() - kLogSuffix.size());
  const size_t first = stem.find('.');
  const size_t second = first == std::string_view::npos ? first : stem.find('.', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  uint64_t job = 0;
  TaskId task;
  if (!ParseField(stem.substr(0, first), job) || !ParseField(stem.substr(first + 1, second - first - 1), task.index) ||
      !ParseField(stem.substr(second + 1), task.attempt)) {
    return std::nullopt;
  }
  task.job = JobId(job);
  return task;
}

std::optional<TaskId> ParseCappedLogName(std::string_view name) {
  for (std::string_view suffix : kCappedSuffixes) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      // "<stem>.log.1" -> "<stem>.log", parsed as a log's own name.
      return ParseTaskLogName(name.substr(0, name.size() - suffix.size() + kLogSuffix.size()));
    }
  }
  return std::nullopt;
}

TaskLogJanitor::TaskLogJanitor(std::string log_dir, TaskLogRetention retention, const Clock* clock,
                               std::shared_ptr<spdlog::logger> logger, FreeBytesProbe free_bytes)
    : log_dir_(std::move(log_dir)),
      retention_(retention),
      clock_(clock),
      log_(logger != nullptr ? std::move(logger) : spdlog::default_logger()),
      free_bytes_(free_bytes != nullptr ? std::move(free_bytes) : FreeBytesProbe(FreeBytes)) {}

bool TaskLogJanitor::DiskShort() {
  if (retention_.min_free_bytes == 0) return false;
  auto free = free_bytes_(log_dir_);
  return free.ok() && *free < retention_.min_free_bytes;
}

int64_t TaskLogJanitor::NextStepMs() const {
  if (in_pass_) return INT64_MIN;
  return retention_.min_free_bytes == 0 ? next_pass_ms_ : std::min(next_pass_ms_, next_pressure_check_ms_);
}

void TaskLogJanitor::Step(const LivePredicate& live) {
  if (!in_pass_) {
    const int64_t now = clock_->MonoMs();
    if (now < next_pass_ms_) {
      // A disk short of space does not wait for the next pass.
      if (retention_.min_free_bytes == 0 || now < next_pressure_check_ms_) return;
      next_pressure_check_ms_ = now + kPressureCheckEveryMs;
      if (!DiskShort()) return;
    }
    std::error_code ec;
    fs::directory_iterator it(log_dir_, ec);
    if (ec) {
      next_pass_ms_ = now + kPassEveryMs;
      log_->warn("task logs not swept: cannot list the log directory dir={} error=\"{}\"", log_dir_, ec.message());
      return;
    }
    in_pass_ = true;
    pass_started_ms_ = now;
    pass_wall_ms_ = clock_->WallMs();
    it_ = std::move(it);
  }
  if (it_.has_value()) {
    Read(live);
    if (!it_.has_value()) RelieveDisk();
  }
  Remove(live);
  if (!it_.has_value() && doomed_.empty()) EndPass();
}

void TaskLogJanitor::Read(const LivePredicate& live) {
  const fs::directory_iterator end;
  std::error_code ec;
  for (size_t n = 0; n < kEntriesPerStep && *it_ != end; ++n) {
    const fs::path& path = (*it_)->path();
    const std::optional<TaskId> task = ParseTaskLogName(path.filename().native());
    struct stat st {};
    // lstat, regular files only: a link or a directory named like a log is not one the worker wrote.
    if (task.has_value() && !live(*task) && ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      Log log{*task, path.native(), static_cast<uint64_t>(st.st_size)};
      struct stat rotated {};
      if (::lstat((log.path + ".1").c_str(), &rotated) == 0 && S_ISREG(rotated.st_mode)) {
        log.bytes += static_cast<uint64_t>(rotated.st_size);
        log.rotated = true;
      }
      Consider(std::move(log), MtimeMs(st));
    } else if (!task.has_value()) {
      ReadCapped(path, live);
    }
    it_->increment(ec);
    if (ec) {
      ++pass_errors_;
      if (first_error_.empty()) first_error_ = "listing " + log_dir_ + ": " + ec.message();
      break;
    }
  }
  if (ec || *it_ == end) it_.reset();
}

void TaskLogJanitor::ReadCapped(const fs::path& path, const LivePredicate& live) {
  const std::string name = path.filename().native();
  const std::optional<TaskId> task = ParseCappedLogName(name);
  if (!task.has_value() || live(*task)) return;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  // Its .log decides while it is there (it goes with it); only an absent one
  // leaves it an orphan. A .log that is not a regular file was never the
  // worker's, so what is beside it is not either.
  const std::string base = path.native().substr(0, path.native().rfind(".log") + kLogSuffix.size());
  struct stat log_st {};
  if (::lstat(base.c_str(), &log_st) == 0 || errno != ENOENT) return;
  Doom(Log{*task, path.native(), static_cast<uint64_t>(st.st_size), false}, kOrphan);
}

void TaskLogJanitor::Consider(Log log, int64_t mtime_ms) {
  if (retention_.max_age_ms > 0 && pass_wall_ms_ - mtime_ms > retention_.max_age_ms) {
    Doom(std::move(log), kAge);
    return;
  }
  kept_bytes_ += log.bytes;
  ++kept_count_;
  if (!retention_.KeepsNewest()) return;  // age alone: no order needed, nothing held
  kept_.emplace(mtime_ms, std::move(log));
  // The oldest of the set goes while the set is over a cap: it is older than
  // every other log in it, so it is past that cap in the whole directory too.
  while (!kept_.empty()) {
    const bool over_count = retention_.max_logs > 0 && kept_.size() > retention_.max_logs;
    const bool over_bytes = retention_.max_bytes > 0 && kept_bytes_ > retention_.max_bytes;
    if (!over_count && !over_bytes) break;
    DoomOldestKept(over_count ? kCount : kBytes);
  }
}

void TaskLogJanitor::DoomOldestKept(Reason reason) {
  auto oldest = kept_.begin();
  kept_bytes_ -= oldest->second.bytes;
  --kept_count_;
  Doom(std::move(oldest->second), reason);
  kept_.erase(oldest);
}

void TaskLogJanitor::Doom(Log log, Reason reason) {
  log.reason = reason;
  doomed_bytes_ += log.bytes;
  doomed_.push_back(std::move(log));
}

void TaskLogJanitor::RelieveDisk() {
  if (retention_.min_free_bytes == 0) return;
  auto free = free_bytes_(log_dir_);
  if (!free.ok()) {
    ++pass_errors_;
    if (first_error_.empty()) first_error_ = free.status().ToString();
    return;
  }
  // What the removals already doomed will free counts towards it.
  uint64_t expected = *free + doomed_bytes_;
  while (expected < retention_.min_free_bytes && !kept_.empty()) {
    expected += kept_.begin()->second.bytes;
    DoomOldestKept(kDiskShort);
  }
}

void TaskLogJanitor::Remove(const LivePredicate& live) {
  for (size_t n = 0; n < kRemovalsPerStep && !doomed_.empty(); ++n) {
    Log log = std::move(doomed_.front());
    doomed_.pop_front();
    doomed_bytes_ -= log.bytes;
    if (live(log.task)) continue;  // bound again since it was read: its log is wanted
    std::error_code ec;
    const bool removed = fs::remove(log.path, ec);
    if (ec) {
      ++pass_errors_;
      if (first_error_.empty()) first_error_ = log.path + ": " + ec.message();
      continue;
    }
    // What capping left beside it (log_cap.h) goes with it. An ended task's
    // log is capped no more, so without a .1 when read there is none now
    // (two system calls saved per log: a third of a pass's time).
    if (log.rotated) {
      fs::remove(log.path + ".1", ec);
      fs::remove(log.path + ".dropped", ec);
    }
    if (!removed) continue;  // gone already (removed by hand)
    ++pass_removed_[log.reason];
    pass_removed_bytes_ += log.bytes;
    ++totals_.removed_logs;
    totals_.removed_bytes += log.bytes;
  }
}

void TaskLogJanitor::EndPass() {
  const int64_t now = clock_->MonoMs();
  in_pass_ = false;
  const bool busy = pass_removed_[kCount] + pass_removed_[kBytes] + pass_removed_[kDiskShort] > 0;
  next_pass_ms_ = now + (busy ? kBusyPassEveryMs : kPassEveryMs);
  ++totals_.passes;
  totals_.kept_logs = kept_count_;
  totals_.kept_bytes = kept_bytes_;
  uint64_t removed = 0;
  for (uint64_t count : pass_removed_) removed += count;
  if (removed > 0) {
    log_->info("task logs removed count={} bytes={} older_than_retention={} past_max_logs={} past_max_bytes={} "
               "disk_short={} orphans={} kept={} kept_bytes={} pass_ms={}",
               removed, pass_removed_bytes_, pass_removed_[kAge], pass_removed_[kCount], pass_removed_[kBytes],
               pass_removed_[kDiskShort], pass_removed_[kOrphan], kept_count_, kept_bytes_, now - pass_started_ms_);
  }
  if (pass_errors_ > 0) {
    log_->warn("task logs not all swept errors={} first=\"{}\"", pass_errors_, first_error_);
  }
  kept_.clear();
  kept_bytes_ = 0;
  kept_count_ = 0;
  for (uint64_t& count : pass_removed_) count = 0;
  pass_removed_bytes_ = 0;
  pass_errors_ = 0;
  first_error_.clear();
}

}  // namespace gpool::worker
