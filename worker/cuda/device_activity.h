// Which gpool tasks are launching kernels on which GPU, node-wide, so a
// burst-share task can tell whether the device is otherwise idle: it may
// exceed its compute share only then.
//
// A directory (GPOOL_CUDA_ACTIVITY, default /dev/shm/gpool-cuda-activity.d,
// made 01777 by whoever comes first, like /tmp) holds one small file per
// interposed process and GPU: "<gpu uuid hex>.<task key hex>.<pid>.<random
// hex>", mode 0644, created O_EXCL|O_NOFOLLOW by the process itself (the
// random part makes the name impossible to take first). It holds a Record:
// the task key and the last launch time, CLOCK_MONOTONIC_COARSE (a vDSO read,
// shared by all processes of the host). GPUs are keyed by UUID since device
// ordinals differ between tasks with different CUDA_VISIBLE_DEVICES.
//
// Why files of their own and not one shared mapping: tasks of different
// users are hostile to each other. A shared writable file can be truncated
// under everyone's mapping (SIGBUS in someone's training job) or held
// locked forever (a hang inside cuLaunchKernel). Here a process writes only
// its own file, with pwrite; it reads others' with pread, never maps or
// locks them, skips anything that is not a regular file, and reads a bounded
// number per scan. A hostile task can make burst-share tasks believe the
// device is busy (they keep to their share), or hide its own activity
// (as it could by not launching through the interposer); it cannot crash or
// hang another, nor hide another task's file (sticky directory, owned by
// root or by this user: anything else is not trusted and burst is off).
//
// Costs on the launch path: Touch is an atomic load and compare most
// launches, one pwrite per device every 5 ms; OthersActive answers from a
// cache and scans the directory at most every 20 ms. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "worker/cuda/ledger.h"

namespace gpool::cuda {

// A pause in launches after which a process checks that the worker did not
// sweep its activity file meanwhile (it then publishes under a new name).
// The check is one fstat at the first launch after such a pause, nothing on
// the launch fast path, so it can be short: a second, far below the worker's
// sweep age (ten minutes), and short enough that tests pause past it with
// the product's own value rather than a test-only setting.
inline constexpr std::int64_t kRecheckAfterIdleNs = 1'000'000'000;

class DeviceActivity {
 public:
  // Null when `dir` cannot be made or is not trusted (logged; burst-share
  // then keeps to its share). `task_key` identifies the task (non-zero).
  static DeviceActivity* Open(const char* dir, std::uint64_t task_key);

  // Marks the task active on this process's device `device` at `now_ns`.
  void Touch(int device, std::int64_t now_ns);
  // Whether another task launched on the same GPU within the last 100 ms
  // (true when unsure: the safe answer keeps the share).
  bool OthersActive(int device, std::int64_t now_ns);

  static std::int64_t CoarseNowNs();

  // What each file holds, native byte order (same host).
  struct Record {
    std::uint32_t magic;
    std::uint32_t size;
    std::uint64_t task;
    std::int64_t last_ns;
    std::uint64_t check;  // tells a torn or foreign record
  };

  // Removes this process's files (at exit; best-effort).
  void RemoveOwnFiles();
  // In a forked child: the parent's files are the parent's.
  void AfterForkInChild();

 private:
  DeviceActivity(int dir_fd, std::uint64_t task_key) : dir_fd_(dir_fd), task_(task_key) {}
  // The device's UUID as 32 hex digits; false when the driver cannot say.
  bool UuidLocked(int device);
  // Creates this process's file for `device`; -2 when it cannot.
  int CreateLocked(int device);
  bool ScanLocked(int device, std::int64_t now_ns);

  const int dir_fd_;
  const std::uint64_t task_;
  std::mutex mu_;  // creation, scans and the names below
  char uuid_hex_[kLedgerDevices][33] = {};
  std::string names_[kLedgerDevices];
  // -1: not created yet, -2: cannot publish; else the file.
  std::atomic<int> fd_[kLedgerDevices];
  std::atomic<std::int64_t> next_write_ns_[kLedgerDevices] = {};
  std::atomic<std::int64_t> last_write_ns_[kLedgerDevices] = {};
  std::int64_t recheck_after_idle_ns_ = kRecheckAfterIdleNs;
  std::atomic<std::int64_t> next_scan_ns_[kLedgerDevices] = {};
  std::atomic<bool> others_[kLedgerDevices] = {};
};

// A non-zero key for a task, from its ledger path.
std::uint64_t TaskKey(const char* ledger_path);

// Where the activity directory is: GPOOL_CUDA_ACTIVITY or the default.
const char* ActivityDir();

}  // namespace gpool::cuda
