// The per-task CUDA ledger: a small file in shared memory (the worker names
// it in GPOOL_CUDA_LEDGER, e.g. /dev/shm/gpool-cuda-<job>-<task>-<attempt>)
// that every process of one task maps, so the task's GPU memory share and
// compute share hold for the task as a whole, not per process.
//
// Layout: a header, one compute bucket per device (the task's token bucket,
// see compute_throttle.h), and one entry per process holding its pid, its
// start time and the bytes it holds on each device. A process that dies
// without freeing must not hold its share forever, so whoever sums the
// entries skips (and the writer reclaims) entries whose pid is gone or was
// reused by another process (the start time in /proc/<pid>/stat differs).
// Pids are those of the task's pid namespace: every process of a task must
// share one, as they do under the worker.
//
// Fields are lock-free 64-bit atomics (address-free, so valid across
// processes); the writer serialises entry claims and reservations with
// flock on the file (ledger_file.h). ReadLedger below is the read-only view
// for the worker: header-only, no dependency on the interposer.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>

namespace gpool::cuda {

inline constexpr std::uint32_t kLedgerMagic = 0x31435047;  // "GPC1"
inline constexpr int kLedgerDevices = 16;
inline constexpr int kLedgerProcesses = 128;

static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "the ledger needs address-free 64-bit atomics");

struct LedgerProcess {
  std::atomic<std::int32_t> pid;  // 0: a free entry
  std::uint32_t reserved;
  std::atomic<std::uint64_t> start_ticks;  // field 22 of /proc/<pid>/stat
  std::atomic<std::uint64_t> used[kLedgerDevices];
};

// The task's compute accounting on one device (all its processes).
struct LedgerDevice {
  std::atomic<std::int64_t> tokens_ns;    // the bucket: GPU time the task may still start
  std::atomic<std::int64_t> refilled_ns;  // CLOCK_MONOTONIC of the last refill
  // Kernel time charged so far: measured, or for small kernels' unmeasured
  // launches their estimate until a measured one trues it up (compute_throttle.h).
  std::atomic<std::uint64_t> busy_ns;
  std::atomic<std::uint64_t> launches;    // governed launches so far
};

struct LedgerLayout {
  std::uint32_t magic;
  std::uint32_t size;
  LedgerDevice devices[kLedgerDevices];
  LedgerProcess processes[kLedgerProcesses];
};

// The start time of `pid` in clock ticks since boot, or 0 when it is gone.
inline std::uint64_t ProcessStartTicks(int pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // The command name may hold spaces and parentheses: fields count from the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return 0;
  int field = 2;
  for (; *p != '\0' && field < 22; ++p) {
    if (*p == ' ') ++field;
  }
  std::uint64_t ticks = 0;
  for (; *p >= '0' && *p <= '9'; ++p) ticks = ticks * 10 + static_cast<std::uint64_t>(*p - '0');
  return ticks;
}

// Whether the process an entry names still runs (and is the same process).
inline bool LedgerEntryAlive(const LedgerProcess& entry) {
  const int pid = entry.pid.load(std::memory_order_acquire);
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  const std::uint64_t recorded = entry.start_ticks.load(std::memory_order_relaxed);
  const std::uint64_t now = ProcessStartTicks(pid);
  // No /proc entry readable (hidepid): trust kill().
  return now == 0 || recorded == 0 || now == recorded;
}

struct LedgerTotals {
  bool ok = false;  // false: no ledger at that path, or not one of ours
  int processes = 0;  // live processes with an entry
  std::uint64_t used_bytes[kLedgerDevices] = {};
  std::uint64_t busy_ns[kLedgerDevices] = {};
  std::uint64_t launches[kLedgerDevices] = {};  // governed (charged) launches
};

// Reads a task's ledger without changing it: the bytes its live processes
// hold per device (dead ones are skipped) and the kernel time measured.
// A copy read with pread, never a mapping: the file belongs to the task,
// which could truncate it under the reader's mapping (SIGBUS in the worker).
inline LedgerTotals ReadLedger(const char* path) {
  LedgerTotals totals;
  const int fd = ::open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return totals;
  struct stat st {};
  void* map = nullptr;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    map = ::operator new(sizeof(LedgerLayout), std::align_val_t{alignof(LedgerLayout)});
    if (::pread(fd, map, sizeof(LedgerLayout), 0) != static_cast<ssize_t>(sizeof(LedgerLayout))) {
      ::operator delete(map, std::align_val_t{alignof(LedgerLayout)});
      map = nullptr;
    }
  }
  ::close(fd);
  if (map == nullptr) return totals;
  const auto* ledger = static_cast<const LedgerLayout*>(map);
  if (ledger->magic == kLedgerMagic && ledger->size == sizeof(LedgerLayout)) {
    totals.ok = true;
    for (const LedgerProcess& entry : ledger->processes) {
      if (!LedgerEntryAlive(entry)) continue;
      ++totals.processes;
      for (int d = 0; d < kLedgerDevices; ++d) totals.used_bytes[d] += entry.used[d].load(std::memory_order_relaxed);
    }
    for (int d = 0; d < kLedgerDevices; ++d) {
      totals.busy_ns[d] = ledger->devices[d].busy_ns.load();
      totals.launches[d] = ledger->devices[d].launches.load();
    }
  }
  ::operator delete(map, std::align_val_t{alignof(LedgerLayout)});
  return totals;
}

}  // namespace gpool::cuda
