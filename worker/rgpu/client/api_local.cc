// The remote driver API calls answered without the server: error names and
// strings (a table, as the driver's own), and cuGetProcAddress, which
// answers this library's own implementation of a name (the driver's
// versioning rule: a base name means its _v2 from CUDA 3.2 on, and the
// per-thread-stream flag picks a _ptsz variant where there is one). A name
// this library lacks is CUDA_ERROR_NOT_FOUND here; the interposer in front
// of it then answers its own trampoline, which says CUDA_ERROR_NOT_SUPPORTED.
#include <dlfcn.h>

#include <string>

#include "worker/rgpu/client/api.h"

namespace {

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_PROFILER_DISABLED, "CUDA_ERROR_PROFILER_DISABLED",
     "profiler disabled while using external profiling tool"},
    {CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE",
     "CUDA-capable device(s) is/are busy or unavailable (gpool: the rGPU session server is unreachable)"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_SOURCE, "CUDA_ERROR_INVALID_SOURCE", "device kernel image is invalid"},
    {CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* Find(CUresult code) {
  for (const ErrorText& e : kErrors) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

void* Self() {
  static void* self = [] {
    Dl_info info{};
    dladdr(reinterpret_cast<void*>(&Find), &info);
    return dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  }();
  return self;
}

CUresult Lookup(const char* symbol, void** pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::string base(symbol);
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  std::string candidates[4];
  int n = 0;
  if (version >= (base == "cuGetProcAddress" ? 12000 : 3020)) candidates[n++] = base + "_v2";
  if (per_thread) candidates[n++] = base + "_ptsz";
  candidates[n++] = base;
  *pfn = nullptr;
  for (int i = 0; i < n && *pfn == nullptr && Self() != nullptr && base.rfind("cu", 0) == 0; ++i) {
    *pfn = dlsym(Self(), candidates[i].c_str());
  }
  if (status != nullptr) *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // namespace

GPOOL_RGPU_EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = Find(error);
  *name = e != nullptr ? e->name : nullptr;
  return e != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GPOOL_RGPU_EXPORT CUresult cuGetErrorString(CUresult error, const char** text) {
  if (text == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = Find(error);
  *text = e != nullptr ? e->text : nullptr;
  return e != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GPOOL_RGPU_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                               CUdriverProcAddressQueryResult* status) {
  return Lookup(symbol, pfn, version, flags, status);
}

GPOOL_RGPU_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return Lookup(symbol, pfn, version, flags, nullptr);
}
