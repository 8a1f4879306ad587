#include "control/snapshot_taker.h"

#include <spdlog/spdlog.h>

namespace gpool::control {

void SnapshotTaker::Tick(const state::ClusterState& state, int64_t now_ms) {
  if (!fork_) {
    if (schedule_.Due() && disk_.CheckWrite().ok()) Save(state.applied_index(), state.Snapshot(), 0);
    return;
  }
  if (auto done = fork_->Poll()) Collect(std::move(*done), now_ms);
  if (fork_->running() || now_ms < retry_at_ms_) return;
  const bool due = schedule_.Due() && disk_.CheckWrite().ok();
  if (!due && waiting_.empty()) return;
  for_schedule_ = due;
  bytes_at_start_ = schedule_.bytes_since();
  const Status started = fork_->Start(state);
  if (started.ok()) {
    spdlog::info("snapshot started index={} pid={} fork_ms={:.1f} waiting_exports={}", state.applied_index(),
                 fork_->child_pid(), fork_->last_fork_ms(), waiting_.size());
    return;
  }
  spdlog::warn("snapshot fork failed; encoding on the loop index={} error=\"{}\"", state.applied_index(),
               started.ToString());
  if (due) Save(state.applied_index(), state.Snapshot(), 0);
  // Exports wait for a fork that works: each would be a whole stall.
  retry_at_ms_ = now_ms + kRetryMs;
}

void SnapshotTaker::RequestImage(uint64_t min_index, ImageReady done) {
  waiting_.push_back(Waiter{min_index, std::move(done)});
}

void SnapshotTaker::DropRequests(const Status& why) {
  std::vector<Waiter> dropped = std::move(waiting_);
  waiting_.clear();
  for (Waiter& waiter : dropped) waiter.done(why);
}

void SnapshotTaker::Collect(Result<std::shared_ptr<ForkedImage>> image, int64_t now_ms) {
  if (!image.ok()) {
    spdlog::warn("snapshot failed; retried in {} ms error=\"{}\"", kRetryMs, image.status().ToString());
    retry_at_ms_ = now_ms + kRetryMs;
    // Exports are answered now (the client starts again) rather than held
    // through retries that may keep failing (a full disk).
    DropRequests(Status::Unavailable("the snapshot could not be made (" + image.status().message() +
                                     "); try again"));
    return;
  }
  const std::shared_ptr<ForkedImage>& file = *image;
  // The waiters it covers; the others want a newer one (Tick starts it).
  std::vector<Waiter> served;
  std::erase_if(waiting_, [&](Waiter& waiter) {
    if (waiter.min_index > file->index()) return false;
    served.push_back(std::move(waiter));
    return true;
  });
  for (Waiter& waiter : served) waiter.done(file);
  // A snapshot installed from the leader meanwhile is newer: nothing to save.
  const bool wanted = for_schedule_ || schedule_.Due();
  if (!wanted || file->index() <= schedule_.last_index() || !disk_.CheckWrite().ok()) return;
  if (files_ != nullptr && files_->KeepsImageFiles()) {
    // Issue 49: the log links the child's fsynced file; nothing is read here.
    const uint64_t since = schedule_.bytes_since();
    SaveFile(*file, since > bytes_at_start_ ? since - bytes_at_start_ : 0);
    return;
  }
  Result<std::string> bytes = file->ReadAll();
  if (!bytes.ok()) {
    spdlog::warn("snapshot file unreadable; retried in {} ms error=\"{}\"", kRetryMs, bytes.status().ToString());
    retry_at_ms_ = now_ms + kRetryMs;
    return;
  }
  const uint64_t since = schedule_.bytes_since();
  Save(file->index(), *bytes, since > bytes_at_start_ ? since - bytes_at_start_ : 0);
}

void SnapshotTaker::SaveFile(const ForkedImage& file, uint64_t bytes_left) {
  const uint64_t log_bytes = schedule_.bytes_since() - bytes_left;
  Status status = files_->SaveSnapshotFile(file.index(), file.path(), file.bytes(), file.sha256());
  if (!status.ok()) {
    spdlog::warn("snapshot failed index={} error=\"{}\"", file.index(), status.ToString());
    if (status.code() == StatusCode::kIoError) (void)disk_.WriteFailed(status, "saving a snapshot");
    return;
  }
  schedule_.Covered(file.index(), file.bytes(), bytes_left);
  schedule_.Taken();
  if (metrics_ != nullptr) {
    ++metrics_->snapshots;
    metrics_->last_snapshot_bytes = file.bytes();
  }
  spdlog::info("snapshot saved index={} bytes={} log_bytes_replaced={} kept_as_file=true", file.index(),
               file.bytes(), log_bytes);
}

void SnapshotTaker::Save(uint64_t index, std::string_view image, uint64_t bytes_left) {
  const uint64_t log_bytes = schedule_.bytes_since() - bytes_left;
  Status status = log_.SaveSnapshot(index, image);
  if (!status.ok()) {
    spdlog::warn("snapshot failed index={} error=\"{}\"", index, status.ToString());
    // A failed write leaves LevelDB to be reopened before the next one.
    if (status.code() == StatusCode::kIoError) (void)disk_.WriteFailed(status, "saving a snapshot");
    return;
  }
  // What was applied while the child encoded is not in the image: it still
  // counts towards the next one.
  schedule_.Covered(index, image.size(), bytes_left);
  schedule_.Taken();
  if (metrics_ != nullptr) {
    ++metrics_->snapshots;
    metrics_->last_snapshot_bytes = image.size();
  }
  spdlog::info("snapshot saved index={} bytes={} log_bytes_replaced={}", index, image.size(), log_bytes);
}

}  // namespace gpool::control
