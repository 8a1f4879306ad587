#include "worker/runner/log_cap.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "protocol/base/write_all.h"

namespace gpool::worker {
namespace {

Status Errno(const std::string& what) { return Status::IoError(what + ": " + std::strerror(errno)); }

// Copies bytes [offset, offset + length) of `from` into a new file `to`.
Status CopyRange(int from, uint64_t offset, uint64_t length, const std::string& to) {
  const std::string tmp = to + ".tmp";
  const int out = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (out < 0) return Errno("open " + tmp);
  std::vector<char> buffer(1 << 20);
  uint64_t done = 0;
  while (done < length) {
    const ssize_t n = pread(from, buffer.data(), std::min<uint64_t>(buffer.size(), length - done),
                            static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || !WriteAll(out, std::string_view(buffer.data(), static_cast<size_t>(n)))) break;
    done += static_cast<uint64_t>(n);
  }
  close(out);
  if (rename(tmp.c_str(), to.c_str()) != 0) return Errno("rename " + tmp);
  return Status::Ok();
}

}  // namespace

uint64_t DroppedLogBytes(const std::string& path) {
  std::ifstream in(path + ".dropped");
  uint64_t dropped = 0;
  return (in >> dropped) ? dropped : 0;
}

Result<bool> CapTaskLog(const std::string& path, uint64_t max_bytes, bool finished) {
  struct stat quick {};
  if (stat(path.c_str(), &quick) != 0) {
    if (errno == ENOENT) return Status::NotFound("no log at " + path);
    return Errno("stat " + path);
  }
  if (static_cast<uint64_t>(quick.st_size) <= max_bytes) return false;  // the usual case: one syscall
  const int fd = open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound("no log at " + path);
    return Errno("open " + path);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const Status error = Errno("stat " + path);
    close(fd);
    return error;
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size <= max_bytes) {
    close(fd);
    return false;
  }
  const uint64_t keep = max_bytes / 2;
  const std::string name = path.substr(path.rfind('/') + 1);
  if (finished) {
    const uint64_t dropped = DroppedLogBytes(path) + size - keep;
    const std::string line = "gpool-worker: this log is capped at " + std::to_string(max_bytes >> 20) + " MiB: " +
                             std::to_string(dropped) + " earlier bytes were moved out; its last " +
                             std::to_string(keep) + " follow\n";
    const std::string rewritten = path + ".capped";
    // 0600: it replaces the task's log, which only its owner and the worker
    // may read (issue 31).
    const int out = open(rewritten.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (out >= 0 && !WriteAll(out, line)) {
      const Status error = Errno("write " + rewritten);
      close(out);
      close(fd);
      return error;
    }
    std::vector<char> buffer(1 << 20);
    uint64_t done = 0;
    while (out >= 0 && done < keep) {
      const ssize_t n = pread(fd, buffer.data(), std::min<uint64_t>(buffer.size(), keep - done),
                              static_cast<off_t>(size - keep + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || !WriteAll(out, std::string_view(buffer.data(), static_cast<size_t>(n)))) break;
      done += static_cast<uint64_t>(n);
    }
    if (out >= 0) close(out);
    close(fd);
    if (rename(rewritten.c_str(), path.c_str()) != 0) return Errno("rename " + rewritten);
    std::ofstream(path + ".dropped", std::ios::trunc) << dropped << "\n";
    return true;
  }
  const std::string rotated = path + ".1";
  if (Status copied = CopyRange(fd, size - keep, keep, rotated); !copied.ok()) {
    close(fd);
    return copied;
  }
  if (ftruncate(fd, 0) != 0) {
    const Status error = Errno("truncate " + path);
    close(fd);
    return error;
  }
  const uint64_t dropped = DroppedLogBytes(path) + size;
  const std::string line = "gpool-worker: this log is capped at " + std::to_string(max_bytes >> 20) + " MiB: the " +
                           std::to_string(size) + " bytes before this line were moved out (" +
                           std::to_string(dropped) + " in all; the last " + std::to_string(keep) +
                           " of them are in " + name + ".1 on the node)\n";
  (void)WriteAll(fd, line);
  close(fd);
  std::ofstream(path + ".dropped", std::ios::trunc) << dropped << "\n";
  return true;
}

}  // namespace gpool::worker
