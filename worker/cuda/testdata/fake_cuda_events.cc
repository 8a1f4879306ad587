// The fake libcuda.so.1's events (see fake_cuda.cc). Launches run
// synchronously, so every stream is idle when a call returns and an event
// records "now" on the fake's clock, one of two:
//   - the host's CLOCK_MONOTONIC (the default): an event pair around a
//     launch measures the kernel and whatever the host did between the two
//     records, as a real GPU's timeline includes its idle gaps;
//   - FAKE_CUDA_EVENT_CLOCK=kernels: the fake's summed kernel time, a GPU
//     clock that moves only by each kernel's nominal time (a `busy`
//     kernel's MICROS, nothing for the others; the fake's kernel_ns counts
//     the same), and kernels take no host time (`busy` does not spin): an
//     infinitely fast GPU. An event pair then measures exactly the nominal
//     kernel time between its records, however long the host was
//     descheduled, so a test can compare what the interposer measured with
//     the fake's own count to the nanosecond on a loaded machine, and a
//     share's busy fraction (nominal kernel time over wall time) depends on
//     the throttle alone, not on how much CPU the test got.
// fakeCudaGetStats counts the records, so a test can tell how many launches
// the interposer measured.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "worker/cuda/cuda_driver_api.h"
#include "worker/cuda/testdata/fake_cuda_stats.h"

struct CUevent_st {
  long long recorded_ns;  // -1 until recorded
};

namespace {

std::atomic<unsigned long long> g_fake_event_records{0};

long long FakeEventNowNs() {
  if (fakeCudaKernelClock() != 0) return static_cast<long long>(fakeCudaKernelNs());
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

}  // namespace

extern "C" {

unsigned long long fakeCudaEventRecords() { return g_fake_event_records.load(); }

int fakeCudaKernelClock() {
  static const bool kernel_clock = [] {
    const char* clock = std::getenv("FAKE_CUDA_EVENT_CLOCK");
    return clock != nullptr && std::strcmp(clock, "kernels") == 0;
  }();
  return kernel_clock ? 1 : 0;
}

CUresult cuEventCreate(CUevent* event, unsigned int) {
  if (event == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *event = new CUevent_st{-1};
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent event) {
  delete event;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream) {
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  event->recorded_ns = FakeEventNowNs();
  g_fake_event_records.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

CUresult cuEventRecord_ptsz(CUevent event, CUstream stream) { return cuEventRecord(event, stream); }

CUresult cuEventQuery(CUevent event) {
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent event) { return event == nullptr ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS; }

CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  if (ms == nullptr || start == nullptr || end == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (start->recorded_ns < 0 || end->recorded_ns < 0) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>(end->recorded_ns - start->recorded_ns) / 1e6f;
  return CUDA_SUCCESS;
}

}  // extern "C"
