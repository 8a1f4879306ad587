#include "control/snapshot_restore.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <optional>

#include <spdlog/spdlog.h>

#include "control/log/image_file.h"
#include "control/log/local_log.h"
#include "control/replication/replica_directory.h"
#include "control/replication/stored_snapshot.h"
#include "control/state/cluster_state.h"
#include "protocol/snapshot_file.h"
#include "protocol/snapshot_signing.h"
#include "storage/leveldb_store.h"
#include "storage/log_store.h"
#include "protocol/base/write_all.h"

namespace gpool::control {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kJobIdsSkipped = 1'000'000;
constexpr uint64_t kJobIdsPerMs = 100;
constexpr int64_t kMaxClockSkewMs = 24 * 3600 * 1000;

// The store a coordinator opens at DIR/db, written as it would be after a
// snapshot at `index`: the image, no entries, the hard state.
Status WriteStore(const std::string& db_path, const SnapshotFileHeader& header, std::string stored,
                  uint64_t term, uint64_t job_id_floor) {
  storage::LevelDbOptions db_options;
  db_options.path = db_path;
  GPOOL_ASSIGN_OR_RETURN(auto kv, storage::LevelDbStore::Open(db_options));
  GPOOL_ASSIGN_OR_RETURN(auto store, storage::LogStore::Open(kv.get()));
  GPOOL_RETURN_IF_ERROR(
      store->SaveSnapshot(storage::SnapshotMeta{header.index, header.term}, stored, /*sync=*/true));
  storage::WriteBatch floor;
  floor.Put(kRestoreJobIdFloorKey, std::to_string(job_id_floor));
  GPOOL_RETURN_IF_ERROR(kv->Write(floor, storage::WriteOptions{.sync = true}));
  return store->SaveHardState(storage::HardState{term, 0, header.index}, /*sync=*/true);
}

// The image as the file a snapshot keeps (log/image_file.h), fsynced, with
// the directory: LevelDB gets only the reference. Inline, a 1.39 GB image
// (100,000 GPUs, a million retained jobs) was read back through LevelDB on
// every start and stayed resident twice over, in LevelDB's block cache and
// as Raft's snapshot, until the first snapshot replaced it: 4.9 GB where the
// state is 2.3 (gpool-bench-scale; heaptrack).
Result<replication::ImageFileRef> WriteRestoredImage(const std::string& dir, uint64_t index, std::string_view image,
                                                     const std::string& sha256) {
  replication::ImageFileRef ref{replication::ImageFileName(index), image.size(), sha256};
  const std::string path = (fs::path(dir) / ref.name).string();
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError("cannot create " + path + ": " + std::strerror(errno));
  if (!WriteAll(fd, image)) {
    const std::string why = std::strerror(errno);
    close(fd);
    return Status::IoError("cannot write " + path + ": " + why);
  }
  const bool synced = fdatasync(fd) == 0;
  const std::string why = synced ? "" : std::strerror(errno);
  if (close(fd) != 0 || !synced) return Status::IoError("cannot sync " + path + ": " + why);
  GPOOL_RETURN_IF_ERROR(replication::SyncDirectory(dir));
  return ref;
}

Status WriteRestoredDataDir(const RestoreOptions& options, SnapshotFile& file, uint64_t term, uint64_t job_id_floor) {
  GPOOL_ASSIGN_OR_RETURN(replication::ImageFileRef ref,
                         WriteRestoredImage(options.data_dir, file.header.index, file.state, file.header.sha256));
  std::string().swap(file.state);  // written; the store takes only the reference
  std::string stored;
  if (options.voters.empty()) {
    // What a single replica's log stores for an image kept as a file.
    stored = std::string(log::LocalLog::kImageRefMagic) + wire::PackToString(ref);
  } else {
    raft::ConfState conf;
    conf.voters = options.voters;
    conf.Normalize();
    // No addresses: each replica's command line gives them when it starts.
    stored = replication::EncodeStoredSnapshot(
        replication::StoredSnapshot{conf, replication::EncodeSnapshotImage(replication::SnapshotImage{{}, "", ref})});
  }
  return WriteStore((fs::path(options.data_dir) / "db").string(), file.header, std::move(stored), term, job_id_floor);
}

}  // namespace

void ProposeRestoreJobIdFloor(uint64_t floor, const state::ClusterState& state, Proposer& proposer) {
  if (floor <= state.next_job_id()) return;
  spdlog::info("restored cluster: job ids start from {}", floor);
  proposer.Propose(state::SkipJobIdsCmd{floor}, [](const state::ApplyResult& result) {
    if (!result.status.ok()) spdlog::warn("restored job-id floor not committed error=\"{}\"", result.status.ToString());
  });
}

Result<uint64_t> ReadRestoreJobIdFloor(storage::KvStore& kv) {
  GPOOL_ASSIGN_OR_RETURN(std::optional<std::string> value, kv.Get(kRestoreJobIdFloorKey));
  if (!value.has_value()) return uint64_t{0};
  uint64_t floor = 0;
  const auto [end, error] = std::from_chars(value->data(), value->data() + value->size(), floor);
  if (error != std::errc() || end != value->data() + value->size()) {
    return Status::Malformed("the data dir's restore job-id floor is not a number: '" + value->substr(0, 40) + "'");
  }
  return floor;
}

Result<RestoreReport> RestoreDataDir(const RestoreOptions& options) {
  if (options.data_dir.empty()) return Status::InvalidArgument("--data-dir: required");
  std::error_code ec;
  const bool existed = fs::exists(options.data_dir, ec);
  if (existed && (!fs::is_directory(options.data_dir, ec) || !fs::is_empty(options.data_dir, ec))) {
    return Status::FailedPrecondition("data dir " + options.data_dir +
                                      " is not empty: a restore writes a new data dir; move this one aside first");
  }
  // The key first: a verify key that cannot be read is the operator's
  // mistake, said before a large file is read.
  std::optional<SnapshotKey> verify_key;
  if (!options.verify_key_file.empty()) {
    auto key = SnapshotKey::ReadPublic(options.verify_key_file);
    if (!key.ok()) return key.status().WithContext("--snapshot-verify-key");
    verify_key = std::move(*key);
  }
  GPOOL_ASSIGN_OR_RETURN(SnapshotFile file, ReadSnapshotFile(options.snapshot_file));
  GPOOL_RETURN_IF_ERROR(
      CheckSnapshotSignature(file.header, verify_key ? &*verify_key : nullptr, options.snapshot_file));
  // The image must be a state at the index the header names: decode it now,
  // not when a coordinator starts on it. The decoded state is dropped before
  // anything is written: the data dir keeps the file's own bytes, not a
  // re-encoding (at 100,000 GPUs the decoded state is 2.3 GB beside them).
  RestoreReport report;
  {
    state::ClusterState state;
    GPOOL_RETURN_IF_ERROR(state.Restore(file.state).WithContext(options.snapshot_file + ": the state image"));
    if (state.applied_index() != file.header.index) {
      return Status::Malformed(options.snapshot_file + ": the header names index " +
                               std::to_string(file.header.index) + " but the state is at " +
                               std::to_string(state.applied_index()));
    }
    // The header's numbers were range-checked when read; the clock too: a
    // save from the far future (a forged taken_ms) is refused, not clamped.
    if (file.header.taken_ms > options.now_ms + kMaxClockSkewMs) {
      return Status::InvalidArgument(options.snapshot_file + ": taken_ms " + std::to_string(file.header.taken_ms) +
                                     " is more than a day after now (" + std::to_string(options.now_ms) +
                                     "): damaged or forged, or this clock is wrong; nothing was restored");
    }
    // Job ids the old cluster may have handed out since: at most a hundred a
    // millisecond (past what a leader commits), and a million to be sure.
    const uint64_t elapsed_ms = static_cast<uint64_t>(std::max<int64_t>(0, options.now_ms - file.header.taken_ms));
    // Not applied to the image: replicas restored from the same file a few
    // seconds apart would each hold another counter, and give the same
    // submission other ids. The floor goes beside it; the first leader
    // commits it (SkipJobIdsCmd), so every replica applies the leader's.
    report.first_job_id = state.next_job_id() + kJobIdsSkipped + elapsed_ms * kJobIdsPerMs;
    report.term = file.header.term + 1 + elapsed_ms;
    report.jobs = state.jobs().size();
    report.nodes = state.nodes().size();
  }
  report.index = file.header.index;
  report.snapshot_term = file.header.term;
  report.format = file.header.version;
  report.key_id = file.header.key_id;
  report.verified = verify_key.has_value();
  report.state_bytes = file.state.size();

  fs::create_directories(options.data_dir, ec);
  if (ec) return Status::IoError("cannot create data dir " + options.data_dir + ": " + ec.message());
  // Issue 48: a new data dir, private as the coordinator wants it
  // (private_data_dir.h); an empty one an operator made 0755 is narrowed.
  fs::permissions(options.data_dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (ec) return Status::IoError("cannot make data dir " + options.data_dir + " 0700: " + ec.message());
  Status written = WriteRestoredDataDir(options, file, report.term, report.first_job_id);
  if (!written.ok()) {
    // Leave nothing half-written behind: the dir was empty or absent.
    for (const auto& entry : fs::directory_iterator(options.data_dir, ec)) fs::remove_all(entry.path(), ec);
    if (!existed) fs::remove(options.data_dir, ec);
    return written.WithContext("writing " + options.data_dir);
  }
  return report;
}

}  // namespace gpool::control
