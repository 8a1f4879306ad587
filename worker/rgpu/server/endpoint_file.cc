#include "worker/rgpu/server/endpoint_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace gpool::rgpu {

Status WriteEndpointFile(const std::string& path, const std::string& endpoint) {
  const std::string tmp = path + ".tmp";
  const std::string line = endpoint + "\n";
  // O_NOFOLLOW: the directory may be the session owner's (the task's work
  // directory), and a link planted there must not redirect the write.
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError("cannot create " + tmp + ": " + std::strerror(errno));
  const ssize_t written = write(fd, line.data(), line.size());
  const int write_errno = errno;
  const bool closed = close(fd) == 0;
  if (written != static_cast<ssize_t>(line.size()) || !closed) {
    unlink(tmp.c_str());
    return Status::IoError("cannot write " + tmp + ": " +
                           (written < 0 ? std::strerror(write_errno) : std::string("short write")));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return Status::IoError("cannot rename " + tmp + " to " + path + ": " + std::strerror(err));
  }
  return Status::Ok();
}

}  // namespace gpool::rgpu
