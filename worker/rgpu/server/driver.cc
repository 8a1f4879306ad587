#include "worker/rgpu/server/driver.h"

#include <dlfcn.h>

namespace gpool::rgpu {

namespace {
template <typename Fn>
void Resolve(void* handle, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
}
}  // namespace

Result<std::unique_ptr<Driver>> OpenDriver(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Status::NotFound("cannot open the CUDA driver " + path + ": " + (why != nullptr ? why : "dlopen failed"));
  }
  auto d = std::make_unique<Driver>();
  d->handle = handle;
#define GPOOL_RGPU_RESOLVE(name) Resolve(handle, #name, &d->name)
  GPOOL_RGPU_RESOLVE(cuInit);
  GPOOL_RGPU_RESOLVE(cuDriverGetVersion);
  GPOOL_RGPU_RESOLVE(cuDeviceGetCount);
  GPOOL_RGPU_RESOLVE(cuDeviceGet);
  GPOOL_RGPU_RESOLVE(cuDeviceGetName);
  GPOOL_RGPU_RESOLVE(cuDeviceGetUuid);
  GPOOL_RGPU_RESOLVE(cuDeviceGetAttribute);
  GPOOL_RGPU_RESOLVE(cuDeviceTotalMem_v2);
  GPOOL_RGPU_RESOLVE(cuDevicePrimaryCtxRetain);
  GPOOL_RGPU_RESOLVE(cuDevicePrimaryCtxRelease_v2);
  GPOOL_RGPU_RESOLVE(cuDevicePrimaryCtxReset_v2);
  GPOOL_RGPU_RESOLVE(cuDevicePrimaryCtxSetFlags_v2);
  GPOOL_RGPU_RESOLVE(cuDevicePrimaryCtxGetState);
  GPOOL_RGPU_RESOLVE(cuCtxCreate_v2);
  GPOOL_RGPU_RESOLVE(cuCtxDestroy_v2);
  GPOOL_RGPU_RESOLVE(cuCtxSetCurrent);
  GPOOL_RGPU_RESOLVE(cuCtxGetDevice);
  GPOOL_RGPU_RESOLVE(cuCtxSynchronize);
  GPOOL_RGPU_RESOLVE(cuMemAlloc_v2);
  GPOOL_RGPU_RESOLVE(cuMemAllocManaged);
  GPOOL_RGPU_RESOLVE(cuMemAllocPitch_v2);
  GPOOL_RGPU_RESOLVE(cuMemFree_v2);
  GPOOL_RGPU_RESOLVE(cuMemGetInfo_v2);
  GPOOL_RGPU_RESOLVE(cuMemcpyHtoD_v2);
  GPOOL_RGPU_RESOLVE(cuMemcpyHtoDAsync_v2);
  GPOOL_RGPU_RESOLVE(cuMemcpyDtoH_v2);
  GPOOL_RGPU_RESOLVE(cuMemcpyDtoD_v2);
  GPOOL_RGPU_RESOLVE(cuMemcpyDtoDAsync_v2);
  GPOOL_RGPU_RESOLVE(cuMemsetD8_v2);
  GPOOL_RGPU_RESOLVE(cuMemsetD32_v2);
  GPOOL_RGPU_RESOLVE(cuMemsetD8Async);
  GPOOL_RGPU_RESOLVE(cuMemsetD32Async);
  GPOOL_RGPU_RESOLVE(cuModuleLoadData);
  GPOOL_RGPU_RESOLVE(cuModuleLoadFatBinary);
  GPOOL_RGPU_RESOLVE(cuModuleUnload);
  GPOOL_RGPU_RESOLVE(cuModuleGetFunction);
  GPOOL_RGPU_RESOLVE(cuFuncGetParamInfo);
  GPOOL_RGPU_RESOLVE(cuLaunchKernel);
  GPOOL_RGPU_RESOLVE(cuStreamCreate);
  GPOOL_RGPU_RESOLVE(cuStreamDestroy_v2);
  GPOOL_RGPU_RESOLVE(cuStreamSynchronize);
  GPOOL_RGPU_RESOLVE(cuStreamQuery);
  GPOOL_RGPU_RESOLVE(cuEventCreate);
  GPOOL_RGPU_RESOLVE(cuEventDestroy_v2);
  GPOOL_RGPU_RESOLVE(cuEventRecord);
  GPOOL_RGPU_RESOLVE(cuEventQuery);
  GPOOL_RGPU_RESOLVE(cuEventSynchronize);
  GPOOL_RGPU_RESOLVE(cuEventElapsedTime);
#undef GPOOL_RGPU_RESOLVE
  if (d->cuInit == nullptr) {
    dlclose(handle);
    return Status::FailedPrecondition(path + " is not a CUDA driver: it has no cuInit");
  }
  return d;
}

}  // namespace gpool::rgpu
