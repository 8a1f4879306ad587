#include "control/snapshot_taker.h"

#include <spdlog/spdlog.h>

namespace gpool::control {

void MaybeTakeSnapshot(SnapshotSchedule& schedule, const state::ClusterState& state, log::CommitLog& log,
                       DiskFullMode& disk, ReplicationMetrics* metrics) {
  if (!schedule.Due() || !disk.CheckWrite().ok()) return;
  const uint64_t applied = state.applied_index();
  const uint64_t log_bytes = schedule.bytes_since();
  std::string snapshot = state.Snapshot();
  const size_t snapshot_bytes = snapshot.size();
  Status status = log.SaveSnapshot(applied, snapshot);
  if (!status.ok()) {
    spdlog::warn("snapshot failed index={} error=\"{}\"", applied, status.ToString());
    // A failed write leaves LevelDB to be reopened before the next one.
    if (status.code() == StatusCode::kIoError) (void)disk.WriteFailed(status, "saving a snapshot");
    return;
  }
  schedule.Covered(applied, snapshot_bytes);
  if (metrics != nullptr) {
    ++metrics->snapshots;
    metrics->last_snapshot_bytes = snapshot_bytes;
  }
  spdlog::info("snapshot saved index={} bytes={} log_bytes_replaced={}", applied, snapshot_bytes, log_bytes);
}

}  // namespace gpool::control
