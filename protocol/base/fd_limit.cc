#include "protocol/base/fd_limit.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>

namespace gpool {

namespace {

uint64_t AsCount(rlim_t value) {
  return value == RLIM_INFINITY ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(value);
}

}  // namespace

Result<OpenFileLimit> RaiseOpenFileLimit(uint64_t wanted) {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return Status::Internal(std::string("getrlimit(RLIMIT_NOFILE): ") + std::strerror(errno));
  }
  OpenFileLimit result{AsCount(limit.rlim_cur), AsCount(limit.rlim_cur), AsCount(limit.rlim_max)};
  const uint64_t target = std::min(wanted, result.hard);
  if (result.before >= target) return result;
  limit.rlim_cur = static_cast<rlim_t>(target);
  // A failure leaves the old limit, which the caller sees in `now`.
  if (setrlimit(RLIMIT_NOFILE, &limit) == 0) result.now = target;
  return result;
}

}  // namespace gpool
