#include "control/snapshot_fork.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include "control/log/image_file.h"
#include "protocol/base/sha256.h"
#include "protocol/base/write_all.h"

namespace gpool::control {
namespace snapshot_fork_detail {

// Exit codes of the child, for the parent's error message.
constexpr int kChildEncodeFailed = 3;
constexpr int kChildWriteFailed = 4;
constexpr int kChildOrphaned = 5;

// The image file, synced as it is written: a fdatasync every
// kIncrementalSyncBytes (Redis's rdb-save-incremental-fsync) rather than one
// at the end, so the disk takes the image as a steady trickle instead of one
// burst of hundreds of MB that the loop's own small fsyncs would queue behind.
constexpr size_t kIncrementalSyncBytes = size_t{8} << 20;

// The child: plain memory and file I/O only (see the header), then _exit, so
// no destructor, atexit handler or stdio buffer of the parent's runs here.
[[noreturn]] void RunChild(const SnapshotFork::Encoder& encoder, const state::ClusterState& state,
                           const std::string& path, int report_fd, pid_t parent) {
  // Dies with the coordinator; a parent gone before prctl took effect too.
  (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(kChildOrphaned);
  // Keep only the report pipe and stdio: the child inherited every fd of the
  // coordinator, its listening sockets included, and a coordinator restarted
  // right after a crash found its client port still bound by the dying child
  // ("Address already in use", gpool-bench-scale).
  if (report_fd > 3) (void)close_range(3, static_cast<unsigned>(report_fd) - 1, 0);
  (void)close_range(static_cast<unsigned>(report_fd) + 1, ~0U, 0);
  // Background work: behind the coordinators' loops for the CPU. In a
  // gpool-bench-e2e burst on 2 cores all three replicas forked at the same
  // index, their three children took the cores and the leader's loop went
  // 520 ms without a turn: the followers elected a new leader (2 runs of 5).
  // A nice of 10 weighs about a tenth of the loop's; the child still gets
  // any idle core at full speed.
  (void)nice(kSnapshotChildNice);  // relative: a coordinator run under nice stays ahead too
  // A test's encoder makes its image whole, before the file takes an fd.
  std::optional<std::string> whole;
  if (encoder) {
    try {
      whole = encoder(state);
    } catch (...) {
      _exit(kChildEncodeFailed);
    }
  }
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) _exit(kChildWriteFailed);
  // Synced here, off the loop: a replicated coordinator keeps this very file
  // as its snapshot (log/image_file.h), only linking it. The state is encoded
  // straight into the file a few MB at a time (ClusterState::SnapshotTo): the
  // child's own memory stays a few MB at any state size, where an image held
  // whole was 2.8 GB more per snapshot at 100,000 GPUs, on each replica.
  Sha256 digest;
  uint64_t bytes = 0;
  size_t unsynced = 0;
  auto write_piece = [&](std::string_view piece) {
    if (!WriteAll(fd, piece)) _exit(kChildWriteFailed);
    digest.Update(piece);
    bytes += piece.size();
    unsynced += piece.size();
    if (unsynced >= kIncrementalSyncBytes) {
      if (fdatasync(fd) != 0) _exit(kChildWriteFailed);
      unsynced = 0;
    }
  };
  if (whole.has_value()) {
    for (size_t at = 0; at < whole->size(); at += kIncrementalSyncBytes) {
      write_piece(std::string_view(*whole).substr(at, kIncrementalSyncBytes));
    }
  } else {
    try {
      state.SnapshotTo(write_piece);
    } catch (...) {
      _exit(kChildEncodeFailed);
    }
  }
  if (fdatasync(fd) != 0 || close(fd) != 0) _exit(kChildWriteFailed);
  const std::string report = std::to_string(bytes) + " " + digest.HexDigest() + "\n";
  if (!WriteAll(report_fd, report)) _exit(kChildWriteFailed);
  _exit(0);
}

std::string ExitText(int wstatus) {
  if (WIFSIGNALED(wstatus)) return "was killed by signal " + std::to_string(WTERMSIG(wstatus));
  const int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  switch (code) {
    case kChildEncodeFailed: return "failed encoding the state";
    case kChildWriteFailed: return "failed writing its file (is the data dir full?)";
    case kChildOrphaned: return "found its parent gone";
    default: return "exited with status " + std::to_string(code);
  }
}

}  // namespace snapshot_fork_detail

// An image nothing linked (an export's) is the whole state: its blocks are
// freed off the loop (image_file.h).
ForkedImage::~ForkedImage() { (void)replication::RemoveInBackground(path_); }

Result<std::string> ForkedImage::ReadAt(uint64_t offset, size_t length) const {
  if (offset > bytes_) return Status::InvalidArgument("offset " + std::to_string(offset) + " is past the image's end");
  length = static_cast<size_t>(std::min<uint64_t>(length, bytes_ - offset));
  const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError("opening snapshot file " + path_ + ": " + std::strerror(errno));
  std::string out(length, '\0');
  size_t done = 0;
  while (done < length) {
    const ssize_t n = pread(fd, out.data() + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "the file is shorter than its image";
      close(fd);
      return Status::IoError("reading snapshot file " + path_ + ": " + why);
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  return out;
}

SnapshotFork::SnapshotFork(std::string dir, Encoder encoder, std::string prefix)
    : dir_(std::move(dir)), encoder_(std::move(encoder)), prefix_(std::move(prefix)) {
  // Images a crashed coordinator left behind are of no use to anyone.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    const bool removing = name.ends_with(std::string(".tmp") + std::string(replication::kRemovingSuffix));
    if (name.starts_with(prefix_) && (name.ends_with(".tmp") || removing)) std::filesystem::remove(entry.path(), ec);
  }
}

SnapshotFork::~SnapshotFork() { KillChild(); }

void SnapshotFork::KillChild() {
  if (pid_ > 0) {
    (void)kill(pid_, SIGKILL);
    int wstatus = 0;
    while (waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
    }
    (void)unlink(pending_path_.c_str());
  }
  pid_ = -1;
  if (pipe_fd_ >= 0) close(pipe_fd_);
  pipe_fd_ = -1;
}

Status SnapshotFork::Start(const state::ClusterState& state) {
  if (running()) {
    return Status::FailedPrecondition("a snapshot of index " + std::to_string(pending_index_) + " is being made");
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::Internal(std::string("snapshot pipe: ") + std::strerror(errno));
  const std::string path = (std::filesystem::path(dir_) / (prefix_ + std::to_string(getpid()) + "-" +
                                                           std::to_string(++sequence_) + ".tmp")).string();
  const pid_t parent = getpid();
  // The child starts with every signal blocked (it inherits the mask), so no
  // handler of the coordinator's ever runs in it; SIGKILL still ends it.
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  const auto start = std::chrono::steady_clock::now();
  pthread_sigmask(SIG_BLOCK, &all, &old);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    snapshot_fork_detail::RunChild(encoder_, state, path, fds[1], parent);
  }
  const int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  last_fork_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return Status::Internal(std::string("fork for a snapshot: ") + std::strerror(fork_errno));
  }
  pid_ = pid;
  pipe_fd_ = fds[0];
  pending_path_ = path;
  pending_index_ = state.applied_index();
  return Status::Ok();
}

std::optional<Result<std::shared_ptr<ForkedImage>>> SnapshotFork::Poll() {
  if (!running()) return std::nullopt;
  int wstatus = 0;
  const pid_t reaped = waitpid(pid_, &wstatus, WNOHANG);
  if (reaped == 0 || (reaped < 0 && errno == EINTR)) return std::nullopt;
  const pid_t child = pid_;
  pid_ = -1;
  // The child has exited: its report, if any, is all in the pipe.
  std::string report;
  char buffer[128];
  for (ssize_t n; (n = read(pipe_fd_, buffer, sizeof(buffer))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    report.append(buffer, static_cast<size_t>(n));
  }
  close(pipe_fd_);
  pipe_fd_ = -1;
  if (reaped < 0) {
    (void)unlink(pending_path_.c_str());
    return Result<std::shared_ptr<ForkedImage>>(
        Status::Internal("waiting for snapshot child pid=" + std::to_string(child) + ": " + std::strerror(errno)));
  }
  unsigned long long bytes = 0;
  char digest[65] = {};
  const bool exited_ok = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
  if (!exited_ok || std::sscanf(report.c_str(), "%llu %64s", &bytes, digest) != 2) {
    (void)unlink(pending_path_.c_str());
    const std::string why = exited_ok ? "sent no report" : snapshot_fork_detail::ExitText(wstatus);
    return Result<std::shared_ptr<ForkedImage>>(Status::Internal(
        "snapshot child pid=" + std::to_string(child) + " for index " + std::to_string(pending_index_) + " " + why));
  }
  return Result<std::shared_ptr<ForkedImage>>(
      std::make_shared<ForkedImage>(pending_path_, pending_index_, bytes, std::string(digest)));
}

}  // namespace gpool::control
