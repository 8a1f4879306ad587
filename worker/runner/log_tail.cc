#include "worker/runner/log_tail.h"

#include "worker/runner/log_cap.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gpool::worker {

Result<LogTail> ReadLogTail(const std::string& path, uint64_t max_bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound("no log at " + path);
    return Status::IoError("open " + path + ": " + std::strerror(err));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return Status::IoError("stat " + path + ": " + std::strerror(err));
  }
  LogTail tail;
  tail.size = static_cast<uint64_t>(st.st_size);
  const uint64_t want = std::min({max_bytes, kMaxLogTailBytes, tail.size});
  tail.data.resize(want);
  uint64_t done = 0;
  const uint64_t offset = tail.size - want;
  while (done < want) {
    const ssize_t n = pread(fd, tail.data.data() + done, want - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return Status::IoError("read " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;  // the file shrank under us
    done += static_cast<uint64_t>(n);
  }
  close(fd);
  tail.data.resize(done);
  tail.truncated = tail.data.size() < tail.size;
  tail.dropped = DroppedLogBytes(path);
  return tail;
}

}  // namespace gpool::worker
