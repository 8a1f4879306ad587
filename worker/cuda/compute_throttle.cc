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
      bucket.tokens_ns.fetch_sub(actual - t.estimate_ns, std::memory_order_relaxed);
      bucket.busy_ns.fetch_add(static_cast<std::uint64_t>(actual), std::memory_order_relaxed);
      std::int64_t& average = average_ns_[t.device];
      average = average == 0 ? std::max<std::int64_t>(actual, 1) : (average * 7 + actual) / 8;
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
  if (activity_ != nullptr) activity_->Touch(device, DeviceActivity::CoarseNowNs());
  LedgerDevice& bucket = state_.ledger->Device(device);
  std::unique_lock lock(mu_);
  PollLocked();
  RefillLocked(bucket, MonotonicNs());
  if (BurstingLocked(device)) {
    // Alone on the device: run, but keep the debt a returning neighbour
    // would have to wait out within one window.
    std::int64_t tokens = bucket.tokens_ns.load();
    while (tokens < -capacity_ns_ && !bucket.tokens_ns.compare_exchange_weak(tokens, -capacity_ns_)) {
    }
  } else {
    for (std::int64_t tokens = bucket.tokens_ns.load(); tokens < 0; tokens = bucket.tokens_ns.load()) {
      const std::int64_t wait = std::min(-tokens * 100 / state_.compute_pct, kMaxSleepNs);
      lock.unlock();
      const timespec ts{wait / 1'000'000'000, wait % 1'000'000'000};
      nanosleep(&ts, nullptr);
      lock.lock();
      PollLocked();
      RefillLocked(bucket, MonotonicNs());
      if (BurstingLocked(device)) break;
    }
  }
  ticket->device = device;
  ticket->estimate_ns = average_ns_[device];
  if (real.cuCtxGetCurrent(&ticket->ctx) != CUDA_SUCCESS) return;
  if (!TakeEventsLocked(ticket->ctx, &ticket->start, &ticket->end)) return;
  const auto record = per_thread && real.cuEventRecord_ptsz != nullptr ? real.cuEventRecord_ptsz : real.cuEventRecord;
  if (record(ticket->start, stream) != CUDA_SUCCESS) {
    DropEventsLocked(*ticket);
    return;
  }
  bucket.tokens_ns.fetch_sub(ticket->estimate_ns, std::memory_order_relaxed);
  bucket.launches.fetch_add(1, std::memory_order_relaxed);
  ticket->measured = true;
}

void ComputeThrottle::After(Ticket* ticket, CUstream stream, bool per_thread, CUresult result) {
  if (!ticket->measured) return;
  const RealDriver& real = state_.real;
  LedgerDevice& bucket = state_.ledger->Device(ticket->device);
  std::lock_guard lock(mu_);
  const auto record = per_thread && real.cuEventRecord_ptsz != nullptr ? real.cuEventRecord_ptsz : real.cuEventRecord;
  if (result != CUDA_SUCCESS) {
    bucket.tokens_ns.fetch_add(ticket->estimate_ns, std::memory_order_relaxed);
    ReturnEventsLocked(*ticket);
    return;
  }
  if (record(ticket->end, stream) != CUDA_SUCCESS) {
    bucket.tokens_ns.fetch_add(ticket->estimate_ns, std::memory_order_relaxed);
    DropEventsLocked(*ticket);
    return;
  }
  pending_.push_back({*ticket});
  // Calibrate on the first launch, and bound how far launches run ahead of
  // their measurement.
  if ((average_ns_[ticket->device] == 0 || pending_.size() > kMaxPending) && real.cuEventSynchronize != nullptr) {
    RelaxedCapture relaxed(real);
    real.cuEventSynchronize(pending_.front().ticket.end);
  }
  PollLocked();
}

}  // namespace gpool::cuda
