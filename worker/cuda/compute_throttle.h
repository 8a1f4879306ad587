// Keeps a task's GPU time on a device within its compute share
// (GPOOL_GPU_COMPUTE_PCT) over a short window, for every process of the task.
//
// Method: a token bucket per device in the task's ledger, refilled at pct %
// of wall time (capacity: pct % of a 100 ms window), is charged with the
// GPU time of each kernel. The time is measured on the GPU itself: an event
// pair recorded around a governed launch on the launch's stream, read back
// without blocking (cuEventQuery, then cuEventElapsedTime) at later
// launches. Because a launch is asynchronous, the bucket is charged an
// estimate (this process's moving average of the device's kernel times)
// when the launch is made and corrected by the measured time when it is
// read back; the first launch on a device is waited for once to calibrate,
// and at most 256 measured launches may be outstanding (the oldest is then
// waited for), so enqueueing cannot run far ahead of the accounting. A
// launch that finds the bucket empty sleeps until it has refilled.
//
// Which launches are measured (issue 49): while the device's average kernel
// is at least kMeasureEveryLaunchAboveNs (5 us), every launch is. Below
// that, the events, the lock and the precise clock would cost as much as
// the kernel, so one launch in 8 to 23 per thread (16 on average, drawn at
// random so that no periodic launch pattern can line up with it) is
// measured and the others take the fast path, Admit(): charged the estimate
// with two relaxed atomic adds on the ledger, no lock, no event, no precise
// clock read (one coarse vDSO read, as every launch with a ledger already
// makes to publish its activity). A measured launch stands for the
// unmeasured ones its thread charged on that device since its previous
// measured one: they are corrected to its measured time each, so each gap
// is charged (gap length x a randomly chosen kernel of it). That is right on
// average whatever the mix of kernels (charging them the moving average
// instead came to under a tenth of the truth for 1 ms kernels among 99
// empty ones: throttle_test.cc), and a task whose kernels turn long pays for every
// launch since its last measurement at the first long one measured (at most
// 23 launches later). It is noisier than measuring each launch: a kernel
// stretched by another context's time slice counts for its whole gap. So
// sampling is kept to kernels too small for the full path to be cheap next
// to them; from 5 us on, the charge is each launch's own.
//
// Every thread also takes the full path once per coarse
// tick (1-4 ms), whenever the bucket looks empty, and on its first launch:
// that refills the bucket (the one precise clock read), reads measurements
// back, publishes the task's activity and asks again whether a burst-share
// task is alone on the device. A refill that waits for the bucket to run
// dry adds no more than a continuous one except what the latter would have
// capped while the bucket was full, i.e. while the task was under its share.
//
// Launches into a stream being captured (CUDA graphs) are not measured: they
// run nothing then; cuGraphLaunch is governed like a kernel launch instead.
// (A fast-path launch is not asked whether its stream is capturing: that
// would be another driver call per launch. It is charged its estimate,
// under 5 us, so a capture of small kernels holds the task back by that
// much at most, never lets it exceed its share.) Event queries and waits
// switch the thread to relaxed capture mode, so a capture in progress
// elsewhere is not invalidated.
//
// Trade-offs: a kernel's elapsed time includes time slices the GPU gave to
// other processes' contexts while it ran, so under contention a task is
// charged for more than it got: held below its share, never above. Events
// cost two driver calls per measured launch (no syscall: event
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
// Thread-safe: the fast path is lock-free (relaxed atomics; a stale read
// only sends a launch down the full path); the full path takes one mutex
// (uncontended: no syscall) around the pending queue and sleeps outside it.
#pragma once

#include <atomic>
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
    bool charged = false;   // the bucket was charged estimate_ns (fast or full path)
    bool measured = false;  // and events were recorded around the launch
    int device = -1;
    std::int64_t estimate_ns = 0;
    CUcontext ctx = nullptr;
    CUevent start = nullptr;
    CUevent end = nullptr;
    // Of a measured launch: the unmeasured launches it stands for and what
    // they were charged.
    std::int64_t gap_launches = 0;
    std::int64_t gap_charged_ns = 0;
  };

  // The fast path, tried first: charges the launch its estimate and answers
  // true, or answers false (nothing done) when this launch must take the
  // full path: it is to be measured, the bucket looks empty, the thread's
  // housekeeping is due, or the device is not calibrated yet.
  bool Admit(Ticket* ticket);
  // The full path, before a launch on `stream` (a _ptsz launch when
  // `per_thread`) that Admit did not take: waits while the task's bucket is
  // empty, charges the estimate and, when the launch is to be measured,
  // records the start event.
  void Before(CUstream stream, bool per_thread, Ticket* ticket);
  // After either, with the launch's result: records the end event of a
  // measured launch, gives an unlaunched one its charge back.
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
  // Per device: the moving average of measured kernel times (0: not
  // calibrated), written under mu_, read by Admit.
  std::atomic<std::int64_t> average_ns_[kLedgerDevices] = {};
  // Per device: whether the last full path found a burst-share task alone
  // on the device; Admit then launches on a debt too.
  std::atomic<bool> bursting_[kLedgerDevices] = {};
};

// Launches are all measured while the device's average kernel is at least
// this long; below it, one in kMeasureOneIn on average.
inline constexpr std::int64_t kMeasureEveryLaunchAboveNs = 5'000;
inline constexpr int kMeasureOneIn = 16;

std::int64_t MonotonicNs();

}  // namespace gpool::cuda
