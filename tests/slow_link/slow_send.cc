// A fake slow link for one process, for tests only: preloaded (LD_PRELOAD)
// into a program, it holds every send(), sendto() and sendmsg() that
// carried bytes for as long as a link of SLOW_LINK_MIB_S MiB/s would take
// to carry them, before it returns. Whatever the program times of its own
// sending (gpool-probe times each bulk round until the receiver's ack) then
// comes out at most that rate, however fast the real link is. No credit
// builds up while the program is idle, so no burst beats the rate.
//
// tests/probe_test.cc puts gpool-probe behind it on one node
// (slow_link_probe.sh.in); nothing in gpool knows of it.
#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cerrno>
#include <cstdlib>
#include <time.h>

namespace {

double RateMiBs() {
  static const double rate = [] {
    const char* value = std::getenv("SLOW_LINK_MIB_S");
    return value == nullptr ? 0.0 : std::strtod(value, nullptr);
  }();
  return rate;
}

// The real function of that name: the next object's after this one.
template <typename F>
F Next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

ssize_t Hold(ssize_t sent) {
  const double rate = RateMiBs();
  if (sent <= 0 || rate <= 0) return sent;
  const int saved = errno;
  const double seconds = static_cast<double>(sent) / (1 << 20) / rate;
  timespec left{static_cast<time_t>(seconds), static_cast<long>((seconds - static_cast<double>(static_cast<time_t>(seconds))) * 1e9)};
  while (nanosleep(&left, &left) == -1 && errno == EINTR) {
  }
  errno = saved;
  return sent;
}

}  // namespace

extern "C" {

ssize_t send(int fd, const void* buf, size_t len, int flags) {
  static const auto real = Next<ssize_t (*)(int, const void*, size_t, int)>("send");
  return Hold(real(fd, buf, len, flags));
}

ssize_t sendto(int fd, const void* buf, size_t len, int flags, const sockaddr* to, socklen_t to_len) {
  static const auto real = Next<ssize_t (*)(int, const void*, size_t, int, const sockaddr*, socklen_t)>("sendto");
  return Hold(real(fd, buf, len, flags, to, to_len));
}

ssize_t sendmsg(int fd, const msghdr* msg, int flags) {
  static const auto real = Next<ssize_t (*)(int, const msghdr*, int)>("sendmsg");
  return Hold(real(fd, msg, flags));
}

}  // extern "C"
