// Keeps a task's GPU time on a device within its compute share
// (GPOOL_GPU_COMPUTE_PCT) over a short window, for every process of the task.
//
// Method: a token bucket per device in the task's ledger, refilled at pct %
// of wall time (capacity: pct % of a 100 ms window), is charged with the
// GPU time of each kernel. The time is measured on the GPU itself: an event
// pair recorded around every governed launch on the launch's stream, read
// back without blocking (cuEventQuery, then cuEventElapsedTime) at later
// launches. Because a launch is asynchronous, the bucket is charged an
// estimate (this process's moving average of the device's kernel times)
// when the launch is made and corrected by the measured time when it is
// read back; the first launch on a device is waited for once to calibrate,
// and at most 256 measured launches may be outstanding (the oldest is then
// waited for), so enqueueing cannot run far ahead of the accounting. A
// launch that finds the bucket empty sleeps until it has refilled.
//
// Launches into a stream being captured (CUDA graphs) are not measured: they
// run nothing then; cuGraphLaunch is governed like a kernel launch instead.
// Event queries and waits switch the thread to relaxed capture mode, so a
// capture in progress elsewhere is not invalidated.
//
// Trade-offs: a kernel's elapsed time includes time slices the GPU gave to
// other processes' contexts while it ran, so under contention a task is
// charged for more than it got: held below its share, never above. Events
// cost two driver calls per launch (no syscall: event
// records are queue writes, queries read memory) and measure what NVML's
// utilisation counts as busy, per task and at kernel granularity, where
// NVML's process utilisation is per process, coarse (1/6 s samples) and
// absent on some drivers; it works the same against the fake driver. Kernels
// on concurrent streams that overlap are charged each in full, so a task
// with overlapping streams is held below its share, never above it. A
// single kernel longer than the window is not preempted: the task then
// waits for its debt to refill before its next launch, so the mean holds
// over a few kernels' time.
//
// Thread-safe: one mutex (uncontended: no syscall) around the pending queue;
// sleeping happens outside it.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "worker/cuda/cuda_driver_api.h"
#include "worker/cuda/device_activity.h"
#include "worker/cuda/interposer.h"

namespace gpool::cuda {

class ComputeThrottle {
 public:
  // `activity` may be null (a burst-share task then keeps to its share).
  ComputeThrottle(const InterposerState& state, DeviceActivity* activity);

  struct Ticket {
    bool measured = false;
    int device = -1;
    std::int64_t estimate_ns = 0;
    CUcontext ctx = nullptr;
    CUevent start = nullptr;
    CUevent end = nullptr;
  };

  // Before a launch on `stream` (a _ptsz launch when `per_thread`): waits
  // while the task's bucket is empty and records the start event.
  void Before(CUstream stream, bool per_thread, Ticket* ticket);
  // After it, with the launch's result: records the end event.
  void After(Ticket* ticket, CUstream stream, bool per_thread, CUresult result);

 private:
  struct Pending {
    Ticket ticket;
  };
  // Under mu_: charges the measured time of finished launches.
  void PollLocked();
  void RefillLocked(LedgerDevice& bucket, std::int64_t now_ns);
  bool BurstingLocked(int device);
  bool TakeEventsLocked(CUcontext ctx, CUevent* start, CUevent* end);
  void ReturnEventsLocked(const Ticket& ticket);  // for reuse
  void DropEventsLocked(const Ticket& ticket);    // destroyed: they failed


  const InterposerState& state_;
  DeviceActivity* activity_;
  const std::int64_t capacity_ns_;
  std::mutex mu_;
  std::deque<Pending> pending_;
  std::vector<Ticket> spare_events_;  // event pairs for reuse, with their context
  std::int64_t average_ns_[kLedgerDevices] = {};
};

std::int64_t MonotonicNs();

}  // namespace gpool::cuda
