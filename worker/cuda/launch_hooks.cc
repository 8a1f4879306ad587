// The interposer's kernel launch hooks. Without a compute share and a ledger
// a launch is one predictable branch and an indirect call (the fast path:
// no lock, no syscall, no clock). With a ledger the task's activity on the
// device is published (device_activity.h: a clock read per launch, a
// pwrite to this process's own file every 5 ms), for burst-share neighbours; with an enforced share the launch
// goes through the compute throttle (compute_throttle.h): its fast path,
// Admit, for most launches of small kernels (relaxed atomics, a coarse
// clock read), its full path (events, lock, clock) for the rest.
#include <cstdlib>

#include "worker/cuda/compute_throttle.h"
#include "worker/cuda/device_activity.h"
#include "worker/cuda/hooks.h"
#include "worker/cuda/inside_driver.h"
#include "worker/cuda/interposer.h"
#include "worker/cuda/interposer_log.h"

#define GPOOL_CUDA_EXPORT extern "C" __attribute__((visibility("default")))

namespace gpool::cuda {
namespace {

DeviceActivity* OpenActivity() {
  const char* ledger = std::getenv("GPOOL_CUDA_LEDGER");
  if (ledger == nullptr || *ledger == '\0') return nullptr;
  return DeviceActivity::Open(ActivityDir(), TaskKey(ledger));
}

struct Governor {
  DeviceActivity* activity;
  ComputeThrottle* throttle;  // null unless the share is enforced
};

// Built at the first governed launch; never destroyed (launches may come
// from other threads during exit).
Governor& TheGovernor() {
  static Governor* governor = [] {
    const InterposerState& s = State();
    auto* g = new Governor{OpenActivity(), nullptr};
    if (s.launch_mode == LaunchMode::kThrottle) g->throttle = new ComputeThrottle(s, g->activity);
    return g;
  }();
  return *governor;
}

thread_local std::int64_t t_next_publish_ns = 0;

void Publish() {
  DeviceActivity* activity = TheGovernor().activity;
  if (activity == nullptr) return;
  const std::int64_t now = DeviceActivity::CoarseNowNs();
  if (now < t_next_publish_ns) return;
  t_next_publish_ns = now + 1'000'000;
  int device = -1;
  const auto get_device = State().real.cuCtxGetDevice;
  if (get_device != nullptr && get_device(&device) == CUDA_SUCCESS) activity->Touch(device, now);
}

template <typename Launch>
CUresult GovernedLaunch(CUstream stream, bool per_thread, Launch&& launch) {
  if (InsideDriver::Now()) return launch();  // the driver calling itself: governed by the outer hook
  const InterposerState& s = State();
  if (s.launch_mode == LaunchMode::kPublish) {
    Publish();
    return CallDriver(launch);
  }
  ComputeThrottle* throttle = TheGovernor().throttle;
  ComputeThrottle::Ticket ticket;
  if (!throttle->Admit(&ticket)) throttle->Before(stream, per_thread, &ticket);
  const CUresult result = CallDriver(launch);
  throttle->After(&ticket, stream, per_thread, result);
  return result;
}

CUresult MissingLaunch(const char* name) { return MissingDriverSymbol(name); }

}  // namespace
}  // namespace gpool::cuda

using gpool::cuda::LaunchMode;

#define GPOOL_CUDA_LAUNCH_KERNEL(name, per_thread)                                                              \
  GPOOL_CUDA_EXPORT CUresult name(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,             \
                                  unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,      \
                                  CUstream stream, void** params, void** extra) {                              \
    const auto& s = gpool::cuda::State();                                                                       \
    const auto real = s.real.name;                                                                              \
    if (__builtin_expect(s.launch_mode == LaunchMode::kForward && real != nullptr, 1)) {                        \
      return real(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);                                    \
    }                                                                                                           \
    if (real == nullptr) return gpool::cuda::MissingLaunch(#name);                                              \
    return gpool::cuda::GovernedLaunch(                                                                         \
        stream, per_thread, [&] { return real(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra); });    \
  }
GPOOL_CUDA_LAUNCH_KERNEL(cuLaunchKernel, false)
GPOOL_CUDA_LAUNCH_KERNEL(cuLaunchKernel_ptsz, true)

#define GPOOL_CUDA_LAUNCH_KERNEL_EX(name, per_thread)                                                         \
  GPOOL_CUDA_EXPORT CUresult name(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) { \
    const auto& s = gpool::cuda::State();                                                                     \
    const auto real = s.real.name;                                                                            \
    if (__builtin_expect(s.launch_mode == LaunchMode::kForward && real != nullptr, 1)) {                      \
      return real(config, f, params, extra);                                                                  \
    }                                                                                                         \
    if (real == nullptr) return gpool::cuda::MissingLaunch(#name);                                            \
    if (config == nullptr) return real(config, f, params, extra);                                             \
    return gpool::cuda::GovernedLaunch(config->hStream, per_thread,                                           \
                                       [&] { return real(config, f, params, extra); });                       \
  }
GPOOL_CUDA_LAUNCH_KERNEL_EX(cuLaunchKernelEx, false)
GPOOL_CUDA_LAUNCH_KERNEL_EX(cuLaunchKernelEx_ptsz, true)

#define GPOOL_CUDA_LAUNCH_COOPERATIVE(name, per_thread)                                                         \
  GPOOL_CUDA_EXPORT CUresult name(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,             \
                                  unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,      \
                                  CUstream stream, void** params) {                                            \
    const auto& s = gpool::cuda::State();                                                                       \
    const auto real = s.real.name;                                                                              \
    if (__builtin_expect(s.launch_mode == LaunchMode::kForward && real != nullptr, 1)) {                        \
      return real(f, gx, gy, gz, bx, by, bz, shared, stream, params);                                           \
    }                                                                                                           \
    if (real == nullptr) return gpool::cuda::MissingLaunch(#name);                                              \
    return gpool::cuda::GovernedLaunch(stream, per_thread,                                                      \
                                       [&] { return real(f, gx, gy, gz, bx, by, bz, shared, stream, params); }); \
  }
GPOOL_CUDA_LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel, false)
GPOOL_CUDA_LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel_ptsz, true)

// A graph's kernels run as one launch: the events around it measure the
// whole graph, so a task cannot escape its share by capturing its kernels.
#define GPOOL_CUDA_GRAPH_LAUNCH(name, per_thread)                                           \
  GPOOL_CUDA_EXPORT CUresult name(CUgraphExec graph, CUstream stream) {                    \
    const auto& s = gpool::cuda::State();                                                   \
    const auto real = s.real.name;                                                          \
    if (__builtin_expect(s.launch_mode == LaunchMode::kForward && real != nullptr, 1)) {    \
      return real(graph, stream);                                                           \
    }                                                                                       \
    if (real == nullptr) return gpool::cuda::MissingLaunch(#name);                          \
    return gpool::cuda::GovernedLaunch(stream, per_thread, [&] { return real(graph, stream); }); \
  }
GPOOL_CUDA_GRAPH_LAUNCH(cuGraphLaunch, false)
GPOOL_CUDA_GRAPH_LAUNCH(cuGraphLaunch_ptsz, true)
