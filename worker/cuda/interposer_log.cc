#include "worker/cuda/interposer_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpool::cuda {
namespace {

int g_log_fd = STDERR_FILENO;
bool g_log_info = false;

// One write(2) per line, so lines of several threads and processes sharing
// the file do not interleave.
void Write(const char* level, const char* format, va_list args) {
  char line[1024];
  int n = std::snprintf(line, sizeof(line), "gpool-cuda: level=%s pid=%d event=", level, static_cast<int>(getpid()));
  if (n < 0) return;
  const int m = std::vsnprintf(line + n, sizeof(line) - static_cast<std::size_t>(n) - 1, format, args);
  if (m < 0) return;
  n = std::min<int>(n + m, static_cast<int>(sizeof(line)) - 2);
  line[n++] = '\n';
  const ssize_t written = write(g_log_fd, line, static_cast<std::size_t>(n));
  (void)written;  // nowhere to report a failed log write
}

}  // namespace

void InitLog() {
  const char* sink = std::getenv("GPOOL_CUDA_LOG");
  if (sink == nullptr || *sink == '\0') return;
  g_log_info = true;
  if (std::strcmp(sink, "stderr") == 0) return;
  const int fd = open(sink, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd >= 0) g_log_fd = fd;
}

void LogError(const char* format, ...) {
  va_list args;
  va_start(args, format);
  Write("error", format, args);
  va_end(args);
}

void LogInfo(const char* format, ...) {
  if (!g_log_info) return;
  va_list args;
  va_start(args, format);
  Write("info", format, args);
  va_end(args);
}

}  // namespace gpool::cuda
