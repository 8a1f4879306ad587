#include "worker/runner/cuda_shared_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace gpool::worker {
namespace {

std::string Errno(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// Moves whatever is at `path` out of the way under a name nobody uses yet.
Status MoveAside(const std::string& path, const char* why) {
  for (int n = 0; n < 100; ++n) {
    const std::string aside = path + ".untrusted." + std::to_string(getpid()) + "." + std::to_string(n);
    struct stat st {};
    if (lstat(aside.c_str(), &st) == 0) continue;
    if (rename(path.c_str(), aside.c_str()) != 0) return Status::IoError(Errno("moving aside", path));
    spdlog::warn("moved an untrusted path aside path={} to={} reason={}", path, aside, why);
    return Status::Ok();
  }
  return Status::IoError("moving aside " + path + ": no free name");
}

// "<32 hex>.<16 hex>.<pid>.<16 hex>": the interposer's name for a process's
// file (device_activity.cc). Nothing else is ever swept, whatever directory
// the operator named.
bool ActivityFileName(const char* name) {
  auto hex = [&](size_t n) {
    for (size_t i = 0; i < n; ++i, ++name) {
      if (!std::isxdigit(static_cast<unsigned char>(*name))) return false;
    }
    return true;
  };
  auto dot = [&] { return *name++ == '.'; };
  if (!hex(32) || !dot() || !hex(16) || !dot()) return false;
  if (!std::isdigit(static_cast<unsigned char>(*name))) return false;
  while (std::isdigit(static_cast<unsigned char>(*name))) ++name;
  return dot() && hex(16) && *name == '\0';
}

}  // namespace

Status EnsureWorkerDir(const std::string& path, mode_t mode) {
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    const char* why = !S_ISDIR(st.st_mode)           ? "not_a_directory"
                      : st.st_uid != geteuid()       ? "owned_by_another_user"
                                                     : nullptr;
    if (why != nullptr) GPOOL_RETURN_IF_ERROR(MoveAside(path, why));
  } else if (errno != ENOENT) {
    return Status::IoError(Errno("looking at", path));
  }
  if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) return Status::IoError(Errno("creating", path));
  // Opened without following a link, then changed through the descriptor:
  // the path cannot be swapped between the check and the chmod.
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Status::IoError(Errno("opening", path));
  Status status;
  if (fstat(fd, &st) != 0 || st.st_uid != geteuid()) {
    status = Status::IoError(path + " is not this worker's directory");
  } else if ((st.st_mode & S_IWOTH) != 0 && (mode & S_IWOTH) == 0) {
    // /dev/shm or /tmp named by mistake: never narrow a shared directory.
    status = Status::InvalidArgument(path + " is shared (anyone may write it): name a directory of its own");
  } else if (fchmod(fd, mode) != 0) {  // mkdir's mode passed through the umask
    status = Status::IoError(Errno("setting the mode of", path));
  }
  close(fd);
  return status;
}

Status CreateTaskLedger(const std::string& path, uid_t uid, gid_t gid) {
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return Status::IoError(Errno("removing", path));
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError(Errno("creating the ledger", path));
  Status status;
  if (geteuid() == 0 && (uid != 0 || gid != 0) && fchown(fd, uid, gid) != 0) {
    status = Status::IoError(Errno("giving the ledger to its task", path));
  } else if (fchmod(fd, 0600) != 0) {
    status = Status::IoError(Errno("setting the mode of", path));
  }
  close(fd);
  if (!status.ok()) (void)unlink(path.c_str());
  return status;
}

size_t SweepActivityDir(const std::string& dir, int64_t now_ms, int64_t max_idle_ms) {
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0) return 0;
  DIR* listing = fdopendir(dir_fd);
  if (listing == nullptr) {
    close(dir_fd);
    return 0;
  }
  size_t removed = 0;
  while (const dirent* entry = readdir(listing)) {
    const char* name = entry->d_name;
    if (!ActivityFileName(name)) continue;
    struct stat st {};
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode)) continue;
    const int64_t written_ms = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
    const bool stale = S_ISREG(st.st_mode) && now_ms - written_ms > max_idle_ms;
    if ((stale || !S_ISREG(st.st_mode)) && unlinkat(dir_fd, name, 0) == 0) ++removed;
  }
  closedir(listing);  // closes dir_fd too
  if (removed > 0) spdlog::info("swept the CUDA activity directory dir={} removed={}", dir, removed);
  return removed;
}

}  // namespace gpool::worker
