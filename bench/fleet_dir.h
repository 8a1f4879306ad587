// Where a bench's simulated fleet keeps its nodes' task logs (gpool-bench-e2e,
// gpool-bench-scale): GPOOL_BENCH_FLEET_DIR, else tmpfs (/dev/shm) when it is
// writable and has room, else `fallback`. tmpfs is memory: runs kept with
// GPOOL_BENCH_KEEP=1 leave their fleet's logs there (12 GB after a few scale
// runs on a 23 GB machine), and a later run's fleet then could not open its
// task logs and bound nothing. A /dev/shm with less than kFleetTmpfsMinFree
// free is passed over, with a warning that says what fills it.
#pragma once

#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

inline constexpr uint64_t kFleetTmpfsMinFree = uint64_t{4} << 30;

inline std::string BenchFleetDir(const std::string& leaf, const std::string& fallback) {
  if (const char* dir = std::getenv("GPOOL_BENCH_FLEET_DIR")) return (std::filesystem::path(dir) / leaf).string();
  std::error_code ec;
  if (!std::filesystem::is_directory("/dev/shm", ec) || access("/dev/shm", W_OK) != 0) return fallback;
  struct statvfs fs {};
  if (statvfs("/dev/shm", &fs) == 0) {
    const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
    if (free_bytes < kFleetTmpfsMinFree) {
      std::fprintf(stderr,
                   "warning: /dev/shm has %.1f GiB free (kept runs' fleet dirs? `ls /dev/shm`; it is memory); the "
                   "fleet's task logs go to %s instead\n",
                   static_cast<double>(free_bytes) / (1 << 30), fallback.c_str());
      return fallback;
    }
  }
  return "/dev/shm/" + leaf;
}
