// The GPU probe of gpool-probe: host-to-device and device-to-host copy
// bandwidth of every visible GPU, through the CUDA driver API loaded with
// dlopen at run time (nothing links against CUDA; a machine without a driver
// runs the probe and is told so).
//
// For each device: a context, a device buffer of `bytes`, a host buffer
// (pinned with cuMemAllocHost when the driver allows, else ordinary memory),
// one warm-up copy each way, then `rounds` timed copies each way; each
// direction's bandwidth is the best round.
//
// Thread-safety: none needed; one call at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "client/probe/probe_line.h"
#include "protocol/base/status.h"

namespace gpool::probe {

// The driver entry points the probe uses, by their ABI (CUresult is an int,
// CUdevice an int, CUcontext a pointer, CUdeviceptr an unsigned 64-bit).
// Tests fill it with fakes.
struct CudaApi {
  using Ctx = void*;
  using DevPtr = unsigned long long;  // NOLINT(runtime/int): CUdeviceptr
  int (*cuInit)(unsigned int flags) = nullptr;
  int (*cuDeviceGetCount)(int* count) = nullptr;
  int (*cuDeviceGet)(int* device, int ordinal) = nullptr;
  int (*cuDeviceGetName)(char* name, int len, int device) = nullptr;
  int (*cuCtxCreate)(Ctx* ctx, unsigned int flags, int device) = nullptr;
  int (*cuCtxDestroy)(Ctx ctx) = nullptr;
  int (*cuCtxSynchronize)() = nullptr;
  int (*cuMemAlloc)(DevPtr* ptr, size_t bytes) = nullptr;
  int (*cuMemFree)(DevPtr ptr) = nullptr;
  int (*cuMemAllocHost)(void** ptr, size_t bytes) = nullptr;  // optional
  int (*cuMemFreeHost)(void* ptr) = nullptr;                  // optional
  int (*cuMemcpyHtoD)(DevPtr dst, const void* src, size_t bytes) = nullptr;
  int (*cuMemcpyDtoH)(void* dst, DevPtr src, size_t bytes) = nullptr;
  void* library = nullptr;  // the dlopen handle, when loaded
};

// dlopen(`path`) and the entry points above (the _v2 ones where the driver
// has them). NotFound("no CUDA driver") when the library is not there;
// Unavailable when a required entry point is missing.
Result<CudaApi> LoadCudaDriver(const std::string& path = "libcuda.so.1");

struct GpuProbeOptions {
  uint64_t bytes = uint64_t{256} << 20;  // per copy
  uint32_t rounds = 3;
};

// One line per visible device. FailedPrecondition when cuInit fails (no
// device, driver not loaded) or the driver reports no devices; an error on
// one device fails the whole probe, naming it.
Result<std::vector<GpuLine>> RunGpuProbe(const CudaApi& api, const GpuProbeOptions& options);

}  // namespace gpool::probe
