#include "worker/runner/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "protocol/base/write_all.h"

namespace gpool::worker {
namespace {

Status Errno(const std::string& what, const std::string& path, int err) {
  return Status::IoError(what + " " + path + ": " + std::strerror(err));
}

}  // namespace

Status WriteFileAtomic(const std::string& path, const std::string& content, bool sync) {
  // Unique per process, so two writers never share a temporary file.
  const std::string temp = path + ".tmp." + std::to_string(getpid());
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot create", temp, errno);
  if (!WriteAll(fd, content)) {
    const int err = errno;
    close(fd);
    unlink(temp.c_str());
    return Errno("cannot write", temp, err);
  }
  if (sync && fsync(fd) != 0) {
    const int err = errno;
    close(fd);
    unlink(temp.c_str());
    return Errno("cannot sync", temp, err);
  }
  close(fd);
  if (rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(temp.c_str());
    return Errno("cannot rename onto", path, err);
  }
  return Status::Ok();
}

Result<std::string> ReadWholeFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound(path + " does not exist");
    return Errno("cannot open", path, errno);
  }
  std::string out;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return Errno("cannot read", path, err);
    }
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

}  // namespace gpool::worker
