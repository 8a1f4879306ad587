#include "worker/cuda/compute_throttle.h"

#include <algorithm>
#include <ctime>

#include "worker/cuda/interposer_log.h"

namespace gpool::cuda {
namespace {

constexpr std::int64_t kWindowNs = 100'000'000;
constexpr std::size_t kMaxPending = 256;
// Longest single sleep: the bucket and other tasks' activity are looked at
// again at least this often.
constexpr std::int64_t kMaxSleepNs = 20'000'000;
// How often a thread's launches take the full path at least (on the coarse
// clock, so in practice once per tick): refill, read-back, activity, burst.
constexpr std::int64_t kHousekeepingEveryNs = 1'000'000;

// A thread's side of the sampling: when its next measured launch and its
// next housekeeping are due, and per device the unmeasured launches it has
// charged since its last measured one. Zero-initialised (constant: no TLS
// guard on the fast path), so a thread's first launch takes the full path.
struct ThrottleThreadState {
  std::int32_t until_measured;
  std::int64_t housekeeping_at_ns;
  std::uint64_t random;
  std::int64_t gap_launches[kLedgerDevices];
  std::int64_t gap_charged_ns[kLedgerDevices];
};
thread_local ThrottleThreadState t_throttle_thread;

// Launches until the next measured one: 8..23, 16 on average (xorshift64;
// only needs to be unpredictable to the task's launch pattern).
std::int32_t ThrottleDrawGap(ThrottleThreadState& t) {
  if (t.random == 0) t.random = (static_cast<std::uint64_t>(MonotonicNs()) ^ reinterpret_cast<std::uintptr_t>(&t)) | 1;
  t.random ^= t.random << 13;
  t.random ^= t.random >> 7;
  t.random ^= t.random << 17;
  return kMeasureOneIn / 2 + static_cast<std::int32_t>((t.random >> 32) % kMeasureOneIn);
}

// Event queries and waits are "potentially unsafe" calls while any thread
// captures a stream in global mode, and would invalidate that capture: the
// throttle makes them in relaxed mode, as libraries are told to.
class RelaxedCapture {
 public:
  explicit RelaxedCapture(const RealDriver& real) : exchange_(real.cuThreadExchangeStreamCaptureMode) {
    if (exchange_ != nullptr) exchange_(&mode_);
  }
  ~RelaxedCapture() {
    if (exchange_ != nullptr) exchange_(&mode_);
  }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cuThreadExchangeStreamCaptureMode_fn exchange_;
  int mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
};

}  // namespace

std::int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

ComputeThrottle::ComputeThrottle(const InterposerState& state, DeviceActivity* activity)
    : state_(state), activity_(activity), capacity_ns_(kWindowNs * state.compute_pct / 100) {}

void ComputeThrottle::RefillLocked(LedgerDevice& bucket, std::int64_t now_ns) {
  std::int64_t last = bucket.refilled_ns.load(std::memory_order_relaxed);
  if (last == 0) {
    bucket.refilled_ns.compare_exchange_strong(last, now_ns);
    return;
  }
  // Whoever moves the refill time forward adds the tokens for that span, so
  // processes refilling at once never add one span twice.
  if (now_ns <= last || !bucket.refilled_ns.compare_exchange_strong(last, now_ns)) return;
  const std::int64_t add = (now_ns - last) * state_.compute_pct / 100;
  std::int64_t tokens = bucket.tokens_ns.fetch_add(add) + add;
  while (tokens > capacity_ns_ && !bucket.tokens_ns.compare_exchange_weak(tokens, capacity_ns_)) {
  }
}

bool ComputeThrottle::BurstingLocked(int device) {
  return state_.qos == Qos::kBurstShare && activity_ != nullptr &&
         !activity_->OthersActive(device, DeviceActivity::CoarseNowNs());
}

void ComputeThrottle::PollLocked() {
  const RealDriver& real = state_.real;
  if (pending_.empty()) return;
  RelaxedCapture relaxed(real);
  while (!pending_.empty()) {
    Ticket& t = pending_.front().ticket;
    const CUresult done = real.cuEventQuery(t.end);
    if (done == CUDA_ERROR_NOT_READY) break;
    float ms = 0;
    if (done == CUDA_SUCCESS && real.cuEventElapsedTime(&ms, t.start, t.end) == CUDA_SUCCESS) {
      const auto actual = static_cast<std::int64_t>(static_cast<double>(ms) * 1e6);
      LedgerDevice& bucket = state_.ledger->Device(t.device);
      // This launch and the unmeasured ones it stands for, each at its time.
      const std::int64_t charge = actual * (t.gap_launches + 1);
      bucket.tokens_ns.fetch_sub(charge - t.estimate_ns - t.gap_charged_ns, std::memory_order_relaxed);
      // Their estimates are in busy_ns already (unsigned: a negative
      // correction wraps and sums right).
      bucket.busy_ns.fetch_add(static_cast<std::uint64_t>(charge - t.gap_charged_ns), std::memory_order_relaxed);
      const std::int64_t average = average_ns_[t.device].load(std::memory_order_relaxed);
      // Never back to 0 (not calibrated) once measured.
      average_ns_[t.device].store(std::max<std::int64_t>(average == 0 ? actual : (average * 7 + actual) / 8, 1),
                                  std::memory_order_relaxed);
      ReturnEventsLocked(t);
    } else {
      DropEventsLocked(t);  // e.g. its context was destroyed: the events are gone with it
    }
    pending_.pop_front();
  }
}

bool ComputeThrottle::TakeEventsLocked(CUcontext ctx, CUevent* start, CUevent* end) {
  for (auto it = spare_events_.rbegin(); it != spare_events_.rend(); ++it) {
    if (it->ctx != ctx) continue;
    *start = it->start;
    *end = it->end;
    spare_events_.erase(std::next(it).base());
    return true;
  }
  const RealDriver& real = state_.real;
  if (real.cuEventCreate(start, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return false;
  if (real.cuEventCreate(end, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
    real.cuEventDestroy_v2(*start);
    return false;
  }
  return true;
}

void ComputeThrottle::ReturnEventsLocked(const Ticket& ticket) {
  spare_events_.push_back(ticket);
}

void ComputeThrottle::DropEventsLocked(const Ticket& ticket) {
  if (state_.real.cuEventDestroy_v2 == nullptr) return;
  state_.real.cuEventDestroy_v2(ticket.start);
  state_.real.cuEventDestroy_v2(ticket.end);
}

bool ComputeThrottle::Admit(Ticket* ticket) {
  ThrottleThreadState& thread = t_throttle_thread;
  if (--thread.until_measured <= 0) return false;
  if (DeviceActivity::CoarseNowNs() >= thread.housekeeping_at_ns) return false;
  const auto get_device = state_.real.cuCtxGetDevice;
  int device = -1;
  if (get_device == nullptr || get_device(&device) != CUDA_SUCCESS || device < 0 || device >= kLedgerDevices) {
    return false;
  }
  const std::int64_t estimate = average_ns_[device].load(std::memory_order_relaxed);
  if (estimate <= 0 || estimate >= kMeasureEveryLaunchAboveNs) return false;
  LedgerDevice& bucket = state_.ledger->Device(device);
  if (bucket.tokens_ns.load(std::memory_order_relaxed) < 0 && !bursting_[device].load(std::memory_order_relaxed)) {
    return false;  // the full path refills, waits or finds the task alone
  }
  bucket.tokens_ns.fetch_sub(estimate, std::memory_order_relaxed);
  bucket.launches.fetch_add(1, std::memory_order_relaxed);
  thread.gap_launches[device] += 1;
  thread.gap_charged_ns[device] += estimate;
  ticket->device = device;
  ticket->estimate_ns = estimate;
  ticket->charged = true;
  return true;
}

void ComputeThrottle::Before(CUstream stream, bool per_thread, Ticket* ticket) {
  const RealDriver& real = state_.real;
  if (real.cuEventRecord == nullptr || real.cuEventQuery == nullptr || real.cuEventElapsedTime == nullptr ||
      real.cuEventCreate == nullptr || real.cuCtxGetDevice == nullptr || real.cuCtxGetCurrent == nullptr) {
    return;  // a driver without events: launches go unmeasured
  }
  // A launch into a stream being captured runs nothing now (the graph is
  // governed when it is launched), and events on it would join the graph.
  const auto is_capturing =
      per_thread && real.cuStreamIsCapturing_ptsz != nullptr ? real.cuStreamIsCapturing_ptsz : real.cuStreamIsCapturing;
  int capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (is_capturing != nullptr && is_capturing(stream, &capture) == CUDA_SUCCESS &&
      capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    return;
  }
  int device = -1;
  if (real.cuCtxGetDevice(&device) != CUDA_SUCCESS || device < 0 || device >= kLedgerDevices) return;
  ThrottleThreadState& thread = t_throttle_thread;
  const std::int64_t coarse_now = DeviceActivity::CoarseNowNs();
  thread.housekeeping_at_ns = coarse_now + kHousekeepingEveryNs;
  bool measure = thread.until_measured <= 0;
  if (measure) thread.until_measured = ThrottleDrawGap(thread);
  if (activity_ != nullptr) activity_->Touch(device, coarse_now);
  LedgerDevice& bucket = state_.ledger->Device(device);
  std::unique_lock lock(mu_);
  PollLocked();
  RefillLocked(bucket, MonotonicNs());
  const bool bursting = BurstingLocked(device);
  // Alone on the device (or until now: Admit may have run the debt past
  // the cap since): run, but keep the debt a returning neighbour would have
  // to wait out within one window.
  if (bursting_[device].exchange(bursting, std::memory_order_relaxed) || bursting) {
    std::int64_t tokens = bucket.tokens_ns.load();
    while (tokens < -capacity_ns_ && !bucket.tokens_ns.compare_exchange_weak(tokens, -capacity_ns_)) {
    }
  }
  if (!bursting) {
    for (std::int64_t tokens = bucket.tokens_ns.load(); tokens < 0; tokens = bucket.tokens_ns.load()) {
      const std::int64_t wait = std::min(-tokens * 100 / state_.compute_pct, kMaxSleepNs);
      lock.unlock();
      const timespec ts{wait / 1'000'000'000, wait % 1'000'000'000};
      nanosleep(&ts, nullptr);
      lock.lock();
      PollLocked();
      RefillLocked(bucket, MonotonicNs());
      if (BurstingLocked(device)) {
        bursting_[device].store(true, std::memory_order_relaxed);
        break;
      }
    }
  }
  ticket->device = device;
  ticket->estimate_ns = average_ns_[device].load(std::memory_order_relaxed);
  measure = measure || ticket->estimate_ns == 0 || ticket->estimate_ns >= kMeasureEveryLaunchAboveNs;
  if (measure && real.cuCtxGetCurrent(&ticket->ctx) == CUDA_SUCCESS &&
      TakeEventsLocked(ticket->ctx, &ticket->start, &ticket->end)) {
    const auto record =
        per_thread && real.cuEventRecord_ptsz != nullptr ? real.cuEventRecord_ptsz : real.cuEventRecord;
    if (record(ticket->start, stream) == CUDA_SUCCESS) {
      ticket->measured = true;
      // It stands for the thread's unmeasured launches since the last one.
      ticket->gap_launches = thread.gap_launches[device];
      ticket->gap_charged_ns = thread.gap_charged_ns[device];
      thread.gap_launches[device] = 0;
      thread.gap_charged_ns[device] = 0;
    } else {
      DropEventsLocked(*ticket);
    }
  }
  if (!ticket->measured) {
    // Charged like a fast-path launch (no events: the driver could not
    // give them, or this launch is not one to measure).
    thread.gap_launches[device] += 1;
    thread.gap_charged_ns[device] += ticket->estimate_ns;
  }
  bucket.tokens_ns.fetch_sub(ticket->estimate_ns, std::memory_order_relaxed);
  bucket.launches.fetch_add(1, std::memory_order_relaxed);
  ticket->charged = true;
}

void ComputeThrottle::After(Ticket* ticket, CUstream stream, bool per_thread, CUresult result) {
  if (!ticket->charged) return;
  LedgerDevice& bucket = state_.ledger->Device(ticket->device);
  if (!ticket->measured) {
    if (result == CUDA_SUCCESS) {
      bucket.busy_ns.fetch_add(static_cast<std::uint64_t>(ticket->estimate_ns), std::memory_order_relaxed);
      return;
    }
    // Nothing ran: the charge comes back, and the launch leaves the gap.
    bucket.tokens_ns.fetch_add(ticket->estimate_ns, std::memory_order_relaxed);
    ThrottleThreadState& thread = t_throttle_thread;
    thread.gap_launches[ticket->device] -= 1;
    thread.gap_charged_ns[ticket->device] -= ticket->estimate_ns;
    return;
  }
  const RealDriver& real = state_.real;
  std::lock_guard lock(mu_);
  const auto record = per_thread && real.cuEventRecord_ptsz != nullptr ? real.cuEventRecord_ptsz : real.cuEventRecord;
  const bool recorded = result == CUDA_SUCCESS && record(ticket->end, stream) == CUDA_SUCCESS;
  if (!recorded) {
    bucket.tokens_ns.fetch_add(ticket->estimate_ns, std::memory_order_relaxed);
    // The gap it stood for waits for the thread's next measured launch.
    ThrottleThreadState& thread = t_throttle_thread;
    thread.gap_launches[ticket->device] += ticket->gap_launches;
    thread.gap_charged_ns[ticket->device] += ticket->gap_charged_ns;
    if (result != CUDA_SUCCESS) {
      ReturnEventsLocked(*ticket);
    } else {
      DropEventsLocked(*ticket);
    }
    return;
  }
  pending_.push_back({*ticket});
  // Calibrate on the first launch, and bound how far launches run ahead of
  // their measurement.
  if ((average_ns_[ticket->device].load(std::memory_order_relaxed) == 0 || pending_.size() > kMaxPending) &&
      real.cuEventSynchronize != nullptr) {
    RelaxedCapture relaxed(real);
    real.cuEventSynchronize(pending_.front().ticket.end);
  }
  PollLocked();
}

}  // namespace gpool::cuda
