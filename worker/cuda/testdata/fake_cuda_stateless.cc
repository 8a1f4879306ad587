// The fake libcuda.so.1's entry points that need none of its state (see
// fake_cuda.cc): device memory is host memory, so copies and memsets are
// memcpy and memset, and every stream is idle after each call returns.
#include <dlfcn.h>

#include <cstring>
#include <string>

#include "worker/cuda/cuda_driver_api.h"

extern "C" {

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, std::size_t bytes) {
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, std::size_t bytes) {
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) {
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}

// Unified addressing: every pointer is a host address here.
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) { return cuMemcpyDtoD_v2(dst, src, bytes); }

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, std::size_t bytes, CUstream) {
  return cuMemcpyHtoD_v2(dst, src, bytes);
}
CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, std::size_t bytes, CUstream) {
  return cuMemcpyDtoH_v2(dst, src, bytes);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes, CUstream) {
  return cuMemcpyDtoD_v2(dst, src, bytes);
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, std::size_t count) {
  if (dst == 0) return CUDA_ERROR_INVALID_VALUE;
  std::memset(reinterpret_cast<void*>(dst), value, count);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, std::size_t count) {
  if (dst == 0 || dst % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
  auto* words = reinterpret_cast<unsigned int*>(dst);
  for (std::size_t i = 0; i < count; ++i) words[i] = value;
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, std::size_t count, CUstream) {
  return cuMemsetD8_v2(dst, value, count);
}
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, std::size_t count, CUstream) {
  return cuMemsetD32_v2(dst, value, count);
}

CUresult cuStreamQuery(CUstream) { return CUDA_SUCCESS; }

// Two calls whose arguments the interposer's trampolines must pass on
// untouched, through their first (resolving) call too: one with a seventh
// argument on the stack, one with a float in a vector register.
CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int* min_grid, int* block, CUfunction, void*, std::size_t smem,
                                                   int limit, unsigned int flags) {
  *min_grid = limit + static_cast<int>(flags);
  *block = static_cast<int>(smem);
  return CUDA_SUCCESS;
}

float g_mipmap_bias = 0;
CUresult cuTexRefSetMipmapLevelBias(void*, float bias) {
  g_mipmap_bias = bias;
  return CUDA_SUCCESS;
}
CUresult cuTexRefGetMipmapLevelBias(float* bias, void*) {
  *bias = g_mipmap_bias;
  return CUDA_SUCCESS;
}

// fake_cuda.cc's: this file has none of its state, the current context included.
CUresult cuCtxGetCurrent(CUcontext* ctx);

// No graphs: a launch of one runs nothing. Streams are never captured.
CUresult cuGraphLaunch(CUgraphExec, CUstream) {
  CUcontext current = nullptr;
  cuCtxGetCurrent(&current);
  return current == nullptr ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}
CUresult cuGraphLaunch_ptsz(CUgraphExec graph, CUstream stream) { return cuGraphLaunch(graph, stream); }

CUresult cuStreamIsCapturing(CUstream, int* status) {
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult cuStreamIsCapturing_ptsz(CUstream stream, int* status) { return cuStreamIsCapturing(stream, status); }

thread_local int t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
CUresult cuThreadExchangeStreamCaptureMode(int* mode) {
  const int previous = t_capture_mode;
  t_capture_mode = *mode;
  *mode = previous;
  return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int flags);  // fake_cuda.cc's: where this library is

// The driver's versioning rule, reduced to what the fake exports: a base
// name means its _v2 from CUDA 3.2 on (cuGetProcAddress: from 12.0), and the per-thread-stream flag picks
// the _ptsz/_ptds variant where one exists. Symbols come from this very
// library (RTLD_NOLOAD on its own file), never from whatever else is loaded.
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Dl_info info{};
  dladdr(reinterpret_cast<void*>(&cuInit), &info);
  void* self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  const std::string base(symbol);
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  std::string candidates[6];
  int n = 0;
  // cuGetProcAddress itself gained its _v2 in CUDA 12.0.
  if (version >= (base == "cuGetProcAddress" ? 12000 : 3020)) {
    if (per_thread) candidates[n++] = base + "_v2_ptsz";
    if (per_thread) candidates[n++] = base + "_v2_ptds";
    candidates[n++] = base + "_v2";
  }
  if (per_thread) candidates[n++] = base + "_ptsz";
  if (per_thread) candidates[n++] = base + "_ptds";
  candidates[n++] = base;
  *pfn = nullptr;
  for (int i = 0; i < n && *pfn == nullptr && self != nullptr; ++i) *pfn = dlsym(self, candidates[i].c_str());
  if (self != nullptr) dlclose(self);
  if (status != nullptr) *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}

}  // extern "C"
