// The CUDA driver gpool-rgpu-server executes its client's calls on: opened
// with dlopen, so a worker's interposer directory at the head of
// LD_LIBRARY_PATH (memory and compute limits) stands in front of it.
//
// Thread-safety: filled once by Open, read-only afterwards.
#pragma once

#include <memory>
#include <string>

#include "protocol/base/status.h"
#include "worker/cuda/cuda_driver_api.h"

namespace gpool::rgpu {

// Every entry point the server calls, named after its exported symbol. A
// null member: the driver lacks it (its calls answer CUDA_ERROR_NOT_SUPPORTED).
struct Driver {
  void* handle = nullptr;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetUuid)(unsigned char*, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem_v2)(std::size_t*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxReset_v2)(CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxSetFlags_v2)(CUdevice, unsigned) = nullptr;
  CUresult (*cuDevicePrimaryCtxGetState)(CUdevice, unsigned*, int*) = nullptr;
  CUresult (*cuCtxCreate_v2)(CUcontext*, unsigned, CUdevice) = nullptr;
  CUresult (*cuCtxDestroy_v2)(CUcontext) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxGetDevice)(CUdevice*) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, std::size_t) = nullptr;
  CUresult (*cuMemAllocManaged)(CUdeviceptr*, std::size_t, unsigned) = nullptr;
  CUresult (*cuMemAllocPitch_v2)(CUdeviceptr*, std::size_t*, std::size_t, std::size_t, unsigned) = nullptr;
  CUresult (*cuMemFree_v2)(CUdeviceptr) = nullptr;
  CUresult (*cuMemGetInfo_v2)(std::size_t*, std::size_t*) = nullptr;
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void*, std::size_t) = nullptr;
  CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr, const void*, std::size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoH_v2)(void*, CUdeviceptr, std::size_t) = nullptr;
  CUresult (*cuMemcpyDtoD_v2)(CUdeviceptr, CUdeviceptr, std::size_t) = nullptr;
  CUresult (*cuMemcpyDtoDAsync_v2)(CUdeviceptr, CUdeviceptr, std::size_t, CUstream) = nullptr;
  CUresult (*cuMemsetD8_v2)(CUdeviceptr, unsigned char, std::size_t) = nullptr;
  CUresult (*cuMemsetD32_v2)(CUdeviceptr, unsigned, std::size_t) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, std::size_t, CUstream) = nullptr;
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, std::size_t, CUstream) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleLoadFatBinary)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuFuncGetParamInfo)(CUfunction, std::size_t, std::size_t*, std::size_t*) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**) = nullptr;
  CUresult (*cuStreamCreate)(CUstream*, unsigned) = nullptr;
  CUresult (*cuStreamDestroy_v2)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuStreamQuery)(CUstream) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventDestroy_v2)(CUevent) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventQuery)(CUevent) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
};

// Opens `path` ("libcuda.so.1": found on the library path) and resolves
// every member. NotFound: dlopen failed (the message has dlerror's text);
// FailedPrecondition: it lacks cuInit (not a CUDA driver).
Result<std::unique_ptr<Driver>> OpenDriver(const std::string& path);

}  // namespace gpool::rgpu
