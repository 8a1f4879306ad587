// SnapshotFork: encodes the state image off the coordinator's loop thread
// (issue 49), the way Redis makes its RDB saves.
//
// Encoding the whole state (ClusterState::Snapshot) takes seconds at a large
// state (352 MB in 3.5 s for a month of usage at 10,000 GPUs), and on the
// loop thread that was seconds without heartbeats: followers elected another
// leader. Start() fork()s instead: the child holds a copy-on-write image of
// the state at exactly the applied index of the fork, encodes it, writes it to
// a file in `dir` and _exit()s; the loop only pays for fork() (copying page
// tables, milliseconds per GB) and goes on committing. Poll() (once a loop
// turn; it never blocks) reaps the child and hands out the finished file.
//
// Why fork rather than a frozen copy on a worker thread: a deep copy of the
// state in a pause costs about what the encoding does (every job, node and
// usage record is walked and allocated), so the pause would stay seconds;
// persistent structures would change every table of the state machine.
// The price of fork is memory: pages the loop writes while the child runs are
// copied, up to 2x the state's resident size under heavy writes.
//
// The child touches nothing but the state, the allocator and plain file I/O:
// no ZeroMQ, no spdlog, no threads (after fork only the forking thread
// exists; glibc keeps malloc usable in the child). Every signal is blocked in
// it, and it dies with its parent (PR_SET_PDEATHSIG). A child that fails or is
// killed is reported by Poll() as an error and its file removed; the caller
// starts another when it still wants one. At most one child runs at a time.
//
// Files are named "<prefix><pid>-<n>.tmp"; the constructor removes any left
// by an earlier process (a coordinator that crashed mid-snapshot).
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "control/state/cluster_state.h"
#include "protocol/base/status.h"

namespace gpool::control {

// A finished image on disk, fdatasynced by the child; the file is removed
// when the last holder lets go (renamed away at once, its blocks freed off
// the loop: log/image_file.h). A log that keeps it has hard-linked it.
class ForkedImage {
 public:
  ForkedImage(std::string path, uint64_t index, uint64_t bytes, std::string sha256)
      : path_(std::move(path)), index_(index), bytes_(bytes), sha256_(std::move(sha256)) {}
  ~ForkedImage();
  ForkedImage(const ForkedImage&) = delete;
  ForkedImage& operator=(const ForkedImage&) = delete;

  const std::string& path() const { return path_; }
  uint64_t index() const { return index_; }
  uint64_t bytes() const { return bytes_; }
  const std::string& sha256() const { return sha256_; }  // 64 hex digits
  // Up to `length` bytes at `offset` (pread: no shared file position).
  Result<std::string> ReadAt(uint64_t offset, size_t length) const;
  Result<std::string> ReadAll() const { return ReadAt(0, static_cast<size_t>(bytes_)); }

 private:
  std::string path_;
  uint64_t index_;
  uint64_t bytes_;
  std::string sha256_;
};

// The forked child's nice value (snapshot_fork.cc says why).
inline constexpr int kSnapshotChildNice = 10;  // added to the coordinator's own

class SnapshotFork {
 public:
  // What the child runs; ClusterState::Snapshot() unless a test injects a
  // slow or failing one.
  using Encoder = std::function<std::string(const state::ClusterState&)>;

  explicit SnapshotFork(std::string dir, Encoder encoder = {}, std::string prefix = "snapshot-");
  // Kills and reaps a running child and removes its file.
  ~SnapshotFork();
  SnapshotFork(const SnapshotFork&) = delete;
  SnapshotFork& operator=(const SnapshotFork&) = delete;

  // Forks a child that encodes `state` as it is now. FailedPrecondition while
  // one runs (see running()); Internal when fork() fails.
  Status Start(const state::ClusterState& state);
  bool running() const { return pid_ > 0; }
  // The applied index the running child encodes; 0 when none runs.
  uint64_t pending_index() const { return running() ? pending_index_ : 0; }
  pid_t child_pid() const { return pid_; }

  // Never blocks. nullopt while the child runs (or none was started); once it
  // ended, its image or why there is none (Internal: it failed or was killed).
  std::optional<Result<std::shared_ptr<ForkedImage>>> Poll();

  // The loop's cost of the last Start(): fork() and what surrounds it.
  double last_fork_ms() const { return last_fork_ms_; }

 private:
  void KillChild();

  std::string dir_;
  Encoder encoder_;
  std::string prefix_;
  uint64_t sequence_ = 0;
  pid_t pid_ = -1;
  int pipe_fd_ = -1;  // the child's report: "<bytes> <sha256 hex>\n"
  std::string pending_path_;
  uint64_t pending_index_ = 0;
  double last_fork_ms_ = 0;
};

}  // namespace gpool::control
