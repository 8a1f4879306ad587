// cuGetProcAddress and cuGetProcAddress_v2: how the CUDA runtime (11.3+)
// finds nearly every driver entry point, bypassing the exported symbols. The
// interposer asks the real driver first (so versions, flags and errors are
// the driver's own answer), then swaps in its own function when the driver
// answered one the interposer governs:
//   1. by pointer: the answer is the real driver's address of an intercepted
//      export (e.g. its cuMemAlloc_v2), so ours replaces it;
//   2. by name: the requested base name, cudaVersion and per-thread flag map
//      to an intercepted variant (the driver's own rule: "cuMemAlloc" means
//      cuMemAlloc_v2 from CUDA 3.2 on; CU_GET_PROC_ADDRESS_PER_THREAD_-
//      DEFAULT_STREAM selects the _ptsz launch and async allocation
//      variants), for drivers whose answer is an internal address.
// Everything else is the real driver's pointer, unchanged.
#include <dlfcn.h>

#include <cstring>
#include <string>

#include "worker/cuda/cuda_driver_api.h"
#include "worker/cuda/hooks.h"
#include "worker/cuda/interposer.h"
#include "worker/cuda/interposer_log.h"

#define GPOOL_CUDA_EXPORT extern "C" __attribute__((visibility("default")))


namespace gpool::cuda {
namespace {

struct Variant {
  const char* base;      // the name a caller asks for
  int min_version;       // the first cudaVersion that means this variant
  bool per_thread;       // the variant for CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
  const char* exported;  // the variant's exported name
  void* ours;
};

#define GPOOL_CUDA_OURS(name) reinterpret_cast<void*>(&::name)
// Earlier CUDA versions' variants (cuMemAlloc with 32-bit sizes...) are not
// listed: a caller asking for them gets the real driver's.
const Variant kVariants[] = {
    {"cuMemAlloc", 3020, false, "cuMemAlloc_v2", GPOOL_CUDA_OURS(cuMemAlloc_v2)},
    {"cuMemAllocPitch", 3020, false, "cuMemAllocPitch_v2", GPOOL_CUDA_OURS(cuMemAllocPitch_v2)},
    {"cuMemFree", 3020, false, "cuMemFree_v2", GPOOL_CUDA_OURS(cuMemFree_v2)},
    {"cuMemGetInfo", 3020, false, "cuMemGetInfo_v2", GPOOL_CUDA_OURS(cuMemGetInfo_v2)},
    {"cuDeviceTotalMem", 3020, false, "cuDeviceTotalMem_v2", GPOOL_CUDA_OURS(cuDeviceTotalMem_v2)},
    {"cuArrayCreate", 3020, false, "cuArrayCreate_v2", GPOOL_CUDA_OURS(cuArrayCreate_v2)},
    {"cuArray3DCreate", 3020, false, "cuArray3DCreate_v2", GPOOL_CUDA_OURS(cuArray3DCreate_v2)},
    {"cuArrayDestroy", 0, false, "cuArrayDestroy", GPOOL_CUDA_OURS(cuArrayDestroy)},
    {"cuMemAllocManaged", 0, false, "cuMemAllocManaged", GPOOL_CUDA_OURS(cuMemAllocManaged)},
    {"cuMipmappedArrayCreate", 0, false, "cuMipmappedArrayCreate", GPOOL_CUDA_OURS(cuMipmappedArrayCreate)},
    {"cuMipmappedArrayDestroy", 0, false, "cuMipmappedArrayDestroy", GPOOL_CUDA_OURS(cuMipmappedArrayDestroy)},
    {"cuMemCreate", 0, false, "cuMemCreate", GPOOL_CUDA_OURS(cuMemCreate)},
    {"cuMemRelease", 0, false, "cuMemRelease", GPOOL_CUDA_OURS(cuMemRelease)},
    {"cuMemAllocAsync", 0, false, "cuMemAllocAsync", GPOOL_CUDA_OURS(cuMemAllocAsync)},
    {"cuMemAllocAsync", 0, true, "cuMemAllocAsync_ptsz", GPOOL_CUDA_OURS(cuMemAllocAsync_ptsz)},
    {"cuMemAllocFromPoolAsync", 0, false, "cuMemAllocFromPoolAsync", GPOOL_CUDA_OURS(cuMemAllocFromPoolAsync)},
    {"cuMemAllocFromPoolAsync", 0, true, "cuMemAllocFromPoolAsync_ptsz",
     GPOOL_CUDA_OURS(cuMemAllocFromPoolAsync_ptsz)},
    {"cuMemFreeAsync", 0, false, "cuMemFreeAsync", GPOOL_CUDA_OURS(cuMemFreeAsync)},
    {"cuMemFreeAsync", 0, true, "cuMemFreeAsync_ptsz", GPOOL_CUDA_OURS(cuMemFreeAsync_ptsz)},
    // Objects the driver keeps device memory for (object_hooks.cc); the
    // versions are those of cudaTypedefs.h's PFN_<name>_v<version>.
    {"cuCtxCreate", 0, false, "cuCtxCreate", GPOOL_CUDA_OURS(cuCtxCreate)},
    {"cuCtxCreate", 3020, false, "cuCtxCreate_v2", GPOOL_CUDA_OURS(cuCtxCreate_v2)},
    {"cuCtxCreate", 11040, false, "cuCtxCreate_v3", GPOOL_CUDA_OURS(cuCtxCreate_v3)},
    {"cuCtxCreate", 12050, false, "cuCtxCreate_v4", GPOOL_CUDA_OURS(cuCtxCreate_v4)},
    {"cuCtxDestroy", 0, false, "cuCtxDestroy", GPOOL_CUDA_OURS(cuCtxDestroy)},
    {"cuCtxDestroy", 4000, false, "cuCtxDestroy_v2", GPOOL_CUDA_OURS(cuCtxDestroy_v2)},
    {"cuDevicePrimaryCtxRetain", 0, false, "cuDevicePrimaryCtxRetain", GPOOL_CUDA_OURS(cuDevicePrimaryCtxRetain)},
    {"cuDevicePrimaryCtxRelease", 0, false, "cuDevicePrimaryCtxRelease", GPOOL_CUDA_OURS(cuDevicePrimaryCtxRelease)},
    {"cuDevicePrimaryCtxRelease", 11000, false, "cuDevicePrimaryCtxRelease_v2",
     GPOOL_CUDA_OURS(cuDevicePrimaryCtxRelease_v2)},
    {"cuDevicePrimaryCtxReset", 0, false, "cuDevicePrimaryCtxReset", GPOOL_CUDA_OURS(cuDevicePrimaryCtxReset)},
    {"cuDevicePrimaryCtxReset", 11000, false, "cuDevicePrimaryCtxReset_v2",
     GPOOL_CUDA_OURS(cuDevicePrimaryCtxReset_v2)},
    {"cuModuleLoad", 0, false, "cuModuleLoad", GPOOL_CUDA_OURS(cuModuleLoad)},
    {"cuModuleLoadData", 0, false, "cuModuleLoadData", GPOOL_CUDA_OURS(cuModuleLoadData)},
    {"cuModuleLoadDataEx", 0, false, "cuModuleLoadDataEx", GPOOL_CUDA_OURS(cuModuleLoadDataEx)},
    {"cuModuleLoadFatBinary", 0, false, "cuModuleLoadFatBinary", GPOOL_CUDA_OURS(cuModuleLoadFatBinary)},
    {"cuModuleUnload", 0, false, "cuModuleUnload", GPOOL_CUDA_OURS(cuModuleUnload)},
    {"cuLibraryLoadData", 0, false, "cuLibraryLoadData", GPOOL_CUDA_OURS(cuLibraryLoadData)},
    {"cuLibraryLoadFromFile", 0, false, "cuLibraryLoadFromFile", GPOOL_CUDA_OURS(cuLibraryLoadFromFile)},
    {"cuLibraryUnload", 0, false, "cuLibraryUnload", GPOOL_CUDA_OURS(cuLibraryUnload)},
    {"cuStreamCreate", 0, false, "cuStreamCreate", GPOOL_CUDA_OURS(cuStreamCreate)},
    {"cuStreamCreateWithPriority", 0, false, "cuStreamCreateWithPriority",
     GPOOL_CUDA_OURS(cuStreamCreateWithPriority)},
    {"cuStreamDestroy", 0, false, "cuStreamDestroy", GPOOL_CUDA_OURS(cuStreamDestroy)},
    {"cuStreamDestroy", 4000, false, "cuStreamDestroy_v2", GPOOL_CUDA_OURS(cuStreamDestroy_v2)},
    {"cuLaunchKernel", 0, false, "cuLaunchKernel", GPOOL_CUDA_OURS(cuLaunchKernel)},
    {"cuLaunchKernel", 0, true, "cuLaunchKernel_ptsz", GPOOL_CUDA_OURS(cuLaunchKernel_ptsz)},
    {"cuLaunchKernelEx", 0, false, "cuLaunchKernelEx", GPOOL_CUDA_OURS(cuLaunchKernelEx)},
    {"cuLaunchKernelEx", 0, true, "cuLaunchKernelEx_ptsz", GPOOL_CUDA_OURS(cuLaunchKernelEx_ptsz)},
    {"cuLaunchCooperativeKernel", 0, false, "cuLaunchCooperativeKernel", GPOOL_CUDA_OURS(cuLaunchCooperativeKernel)},
    {"cuLaunchCooperativeKernel", 0, true, "cuLaunchCooperativeKernel_ptsz",
     GPOOL_CUDA_OURS(cuLaunchCooperativeKernel_ptsz)},
    {"cuGraphLaunch", 0, false, "cuGraphLaunch", GPOOL_CUDA_OURS(cuGraphLaunch)},
    {"cuGraphLaunch", 0, true, "cuGraphLaunch_ptsz", GPOOL_CUDA_OURS(cuGraphLaunch_ptsz)},
    {"cuGetProcAddress", 0, false, "cuGetProcAddress", GPOOL_CUDA_OURS(cuGetProcAddress)},
    {"cuGetProcAddress", 12000, false, "cuGetProcAddress_v2", GPOOL_CUDA_OURS(cuGetProcAddress_v2)},
};
#undef GPOOL_CUDA_OURS
constexpr int kVariantCount = sizeof(kVariants) / sizeof(kVariants[0]);

// The real driver's address of each variant's export, resolved once.
void* const* RealAddresses() {
  static void* const* addresses = [] {
    auto* out = new void*[kVariantCount];
    for (int i = 0; i < kVariantCount; ++i) out[i] = RealSymbol(kVariants[i].exported);
    return out;
  }();
  return addresses;
}

void* Ours(const char* symbol, void* real, int version, cuuint64_t flags) {
  void* const* addresses = RealAddresses();
  for (int i = 0; i < kVariantCount; ++i) {
    if (addresses[i] != nullptr && addresses[i] == real) return kVariants[i].ours;
  }
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const Variant* best = nullptr;
  for (const Variant& v : kVariants) {
    if (std::strcmp(v.base, symbol) != 0 || v.min_version > version) continue;
    // The per-thread variant when asked for one, else the default-stream one.
    if (v.per_thread && !per_thread) continue;
    if (best == nullptr || v.min_version > best->min_version || (v.per_thread && !best->per_thread)) best = &v;
  }
  return best == nullptr ? nullptr : best->ours;
}

// Remote mode, a name the client library lacks: this library's own export
// of it (its _v2 first, as the driver's rule), a trampoline that answers
// CUDA_ERROR_NOT_SUPPORTED and logs the name once. A runtime that looks
// every name up at start-up then fails only the calls actually made.
CUresult OwnTrampoline(const char* symbol, void** pfn, int version, CUdriverProcAddressQueryResult* status) {
  static void* self = [] {
    Dl_info info{};
    dladdr(reinterpret_cast<void*>(&Ours), &info);
    return dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  }();
  const std::string base(symbol);
  *pfn = nullptr;
  if (self != nullptr && base.rfind("cu", 0) == 0) {
    if (version >= 3020) *pfn = dlsym(self, (base + "_v2").c_str());
    if (*pfn == nullptr) *pfn = dlsym(self, symbol);
  }
  if (status != nullptr) *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult Lookup(const char* symbol, void** pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult* status,
                bool v2) {
  const RealDriver& real = State().real;
  CUresult r = CUDA_ERROR_NOT_FOUND;
  if (real.cuGetProcAddress_v2 != nullptr && (v2 || real.cuGetProcAddress == nullptr)) {
    r = real.cuGetProcAddress_v2(symbol, pfn, version, flags, status);
  } else if (real.cuGetProcAddress != nullptr) {
    r = real.cuGetProcAddress(symbol, pfn, version, flags);
    if (status != nullptr) {
      *status = r == CUDA_SUCCESS ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
  } else {
    LogError("missing_driver_symbol name=cuGetProcAddress result=CUDA_ERROR_NOT_FOUND");
  }
  if (r == CUDA_ERROR_NOT_FOUND && State().remote && symbol != nullptr && pfn != nullptr) {
    return OwnTrampoline(symbol, pfn, version, status);
  }
  if (r != CUDA_SUCCESS || symbol == nullptr || pfn == nullptr || *pfn == nullptr) return r;
  if (void* ours = Ours(symbol, *pfn, version, flags)) *pfn = ours;
  return r;
}

}  // namespace
}  // namespace gpool::cuda

GPOOL_CUDA_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return gpool::cuda::Lookup(symbol, pfn, version, flags, nullptr, false);
}

GPOOL_CUDA_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                               CUdriverProcAddressQueryResult* status) {
  return gpool::cuda::Lookup(symbol, pfn, version, flags, status, true);
}
