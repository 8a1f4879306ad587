// Which gpool tasks are launching kernels on which GPU, node-wide, so a
// burst-share task can tell whether the device is otherwise idle: it may
// exceed its compute share only then.
//
// A small shared-memory file (GPOOL_CUDA_ACTIVITY, default
// "gpool-cuda-activity" beside the task's ledger, i.e. in /dev/shm) holds, per
// GPU (keyed by its UUID, since device ordinals differ between tasks with
// different CUDA_VISIBLE_DEVICES), up to 32 slots of {task key, last launch
// time}. Every interposed process that has a ledger touches its task's slot
// at most once a millisecond when it launches; a slot unused for 10 s may be
// taken by another task. Times are CLOCK_MONOTONIC_COARSE (a vDSO read, no
// syscall), shared by all processes of the host.
//
// The file is made world-writable (0666) because tasks may run as
// different users: a task can therefore make burst-share tasks think the
// device is busy (they fall back to their fixed share), never the reverse
// harm of exceeding another task's guarantee beyond that. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "worker/cuda/ledger.h"

namespace gpool::cuda {

class DeviceActivity {
 public:
  // Null when the file cannot be opened or mapped (burst-share then keeps
  // to its share). `task_key` identifies the task (non-zero).
  static DeviceActivity* Open(const char* path, std::uint64_t task_key);

  // Marks the task active on this process's device `device` at `now_ns`.
  void Touch(int device, std::int64_t now_ns);
  // Whether another task launched on the same GPU within the last 100 ms.
  bool OthersActive(int device, std::int64_t now_ns);

  static std::int64_t CoarseNowNs();

  struct Slot {
    std::atomic<std::uint64_t> task;
    std::atomic<std::int64_t> last_ns;
  };
  struct Gpu {
    std::atomic<std::uint64_t> uuid[2];
    Slot slots[32];
  };
  struct Layout {
    std::uint32_t magic;
    std::uint32_t size;
    Gpu gpus[64];
  };

 private:
  DeviceActivity(Layout* layout, int fd, std::uint64_t task_key) : layout_(layout), fd_(fd), task_(task_key) {}
  // Finds or claims the GPU entry and this task's slot; null when full.
  Slot* Claim(int device, std::int64_t now_ns);

  Layout* layout_;
  int fd_;
  std::uint64_t task_;
  std::mutex mu_;  // claims only
  std::atomic<Gpu*> gpu_[kLedgerDevices] = {};
  std::atomic<Slot*> slot_[kLedgerDevices] = {};
};

// A non-zero key for a task, from its ledger path.
std::uint64_t TaskKey(const char* ledger_path);

}  // namespace gpool::cuda
