// A stand-in for libcuda.so.1 (built as libcuda.so.1 in its own folder) so
// the interposer is tested on machines without a GPU. Device memory is host
// memory (mmap'd without reserve, so an 80 GiB device costs nothing until
// touched); FAKE_CUDA_DEVICES devices (default 1) of FAKE_CUDA_TOTAL_MIB MiB
// each (default 81920), read at cuInit. Pitched rows are aligned to 512
// bytes, or FAKE_CUDA_PITCH_ALIGN.
//
// Kernels are host functions from a fixed registry: `vector_add` (float* a,
// float* b, float* c, int n: c = a + b), `busy` (unsigned long long micros:
// spins that long, so a launch has a known duration) and `noop`. A module is
// PTX text: cuModuleLoadData(Ex) records its `.entry NAME` lines and
// cuModuleGetFunction resolves a name that is both an entry and registered.
//
// Launches run synchronously on the caller's thread, and an event records the
// host's CLOCK_MONOTONIC when it is recorded (or the kernel clock, where
// kernel_ns counts nominal kernel times: fake_cuda_events.cc). Every stream is therefore
// always idle after a call returns, as if the GPU had finished: the
// interposer's measurement (events around a launch) sees exactly the
// kernel's duration, and a test can compare it with the fake's own count.
// Per-thread stream (_ptsz) entry points are the same functions, and some
// call their base entry point by name, as a driver might.
//
// Contexts (a primary one once per device while retained), modules,
// libraries and streams hold device memory as a real driver's do, at the
// costs FAKE_CUDA_OBJECT_COSTS names (object_costs.h's syntax; unset: none),
// so a test can compare the interposer's estimates with what "NVML" (the
// fake's own count, fakeCudaGetStats) sees.
//
// So tests can tell that a call reached the driver and not a shim:
// cuDeviceGetName answers "gpool fake GPU <n>", and fakeCudaGetStats (not a
// CUDA symbol) reports call counts and kernel time. Calls the interposer
// does not intercept (cuDeviceGetName, cuDriverGetVersion,
// cuDeviceGetAttribute, cuCtxGetDevice...) are here so pass-through is
// tested; the fake lacks most of the API, which answers CUDA_ERROR_NOT_FOUND
// through the interposer's forwarders.
#include <sys/mman.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "worker/cuda/array_bytes.h"
#include "worker/cuda/cuda_driver_api.h"
#include "worker/cuda/object_costs.h"
#include "worker/cuda/testdata/fake_cuda_kernels.h"
#include "worker/cuda/testdata/fake_cuda_stats.h"

// Each object remembers what it was charged, where (fake_cuda.cc header).
struct CUctx_st {
  CUdevice device;
  std::size_t charged = 0;
};
struct CUstream_st {
  CUdevice device;
  std::size_t charged;
};
struct CUmod_st {
  std::map<std::string, CUfunc_st> entries;  // each entry's parameter sizes; run set when registered
  CUdevice device = -1;
  std::size_t charged = 0;
};
struct CUlib_st {
  CUmodule module;
};
struct CUarray_st {
  std::size_t bytes;
};
struct CUmipmappedArray_st {
  std::size_t bytes;
};

namespace {

using gpool::cuda::fake::Busy;
using gpool::cuda::fake::FakeKernel;
using gpool::cuda::fake::KernelNamed;
using gpool::cuda::fake::NowNs;
using gpool::cuda::fake::ParamSizes;

constexpr int kMaxFakeDevices = 16;

struct Allocation {
  std::size_t bytes;
  CUdevice device;
};

// Everything below is guarded by g_mu, except the statistics (atomics, read
// without the lock) and each thread's current context.
std::mutex g_mu;
bool g_initialized = false;
int g_devices = 1;
std::size_t g_total[kMaxFakeDevices];
std::size_t g_used[kMaxFakeDevices];
CUctx_st g_primary[kMaxFakeDevices];
std::map<CUdeviceptr, Allocation>* g_allocations = nullptr;
std::map<CUmemGenericAllocationHandle, Allocation>* g_handles = nullptr;
CUmemGenericAllocationHandle g_next_handle = 1;
thread_local CUctx_st* t_current = nullptr;

std::atomic<unsigned long long> g_launches{0};
std::atomic<unsigned long long> g_kernel_ns{0};
std::atomic<unsigned long long> g_alloc_calls{0};
std::atomic<unsigned long long> g_get_info_calls{0};
std::atomic<unsigned long long> g_object_calls{0};
gpool::cuda::ObjectCosts g_costs;  // FAKE_CUDA_OBJECT_COSTS, read at cuInit
std::size_t g_object_bytes[kMaxFakeDevices];  // what live objects hold, per device
int g_primary_retains[kMaxFakeDevices];

bool ValidDevice(CUdevice d) { return d >= 0 && d < g_devices; }

// The current context's device, or -1.
CUdevice CurrentDevice() { return t_current == nullptr ? -1 : t_current->device; }

// Counts `bytes` on the current device; false when it would not fit.
bool Charge(std::size_t bytes, CUdevice* device) {
  *device = CurrentDevice();
  if (*device < 0) return false;
  if (g_used[*device] + bytes > g_total[*device]) return false;
  g_used[*device] += bytes;
  return true;
}

// An object's memory on `device` (-1: none), as a driver holds it; false
// when it does not fit. Every creation call that reaches the fake counts.
bool ChargeObject(CUdevice device, std::size_t bytes) {
  g_object_calls.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(g_mu);
  if (device < 0 || bytes == 0) return true;
  if (g_used[device] + bytes > g_total[device]) return false;
  g_used[device] += bytes;
  g_object_bytes[device] += bytes;
  return true;
}

void UnchargeObject(CUdevice device, std::size_t bytes) {
  std::lock_guard lock(g_mu);
  if (device < 0 || bytes == 0) return;
  g_used[device] -= bytes;
  g_object_bytes[device] -= bytes;
}

CUresult AllocDevice(CUdeviceptr* dptr, std::size_t bytes) {
  g_alloc_calls.fetch_add(1, std::memory_order_relaxed);
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(g_mu);
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  CUdevice device = -1;
  if (!Charge(bytes, &device)) return CUDA_ERROR_OUT_OF_MEMORY;
  void* host = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (host == MAP_FAILED) {
    g_used[device] -= bytes;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *dptr = reinterpret_cast<CUdeviceptr>(host);
  (*g_allocations)[*dptr] = {bytes, device};
  return CUDA_SUCCESS;
}

CUresult FreeDevice(CUdeviceptr dptr) {
  std::lock_guard lock(g_mu);
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto it = g_allocations->find(dptr);
  if (it == g_allocations->end()) return CUDA_ERROR_INVALID_VALUE;
  g_used[it->second.device] -= it->second.bytes;
  munmap(reinterpret_cast<void*>(dptr), it->second.bytes);
  g_allocations->erase(it);
  return CUDA_SUCCESS;
}

// Counts an allocation with no backing store (arrays), as a handle.
CUresult ChargeOpaque(std::size_t bytes, std::size_t* out) {
  g_alloc_calls.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(g_mu);
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  CUdevice device = -1;
  if (!Charge(bytes, &device)) return CUDA_ERROR_OUT_OF_MEMORY;
  *out = bytes;
  return CUDA_SUCCESS;
}

void Uncharge(std::size_t bytes) {
  std::lock_guard lock(g_mu);
  const CUdevice device = CurrentDevice();
  if (device >= 0) g_used[device] -= bytes;
}

CUresult Launch(CUfunction f, void** params) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  // On the kernel clock a kernel takes its nominal time (a `busy` kernel's
  // MICROS, nothing for the others) on a GPU clock of its own, and no host
  // time: `busy` does not spin.
  const bool kernel_clock = fakeCudaKernelClock() != 0;
  const long long start = NowNs();
  if (!kernel_clock || f->run != Busy) f->run(params);
  const long long took = !kernel_clock      ? NowNs() - start
                         : f->run == Busy ? static_cast<long long>(*static_cast<unsigned long long*>(params[0])) * 1000
                                          : 0;
  g_kernel_ns.fetch_add(static_cast<unsigned long long>(took), std::memory_order_relaxed);
  g_launches.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

CUresult LoadModule(CUmodule* module, const void* image) {
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::string text(static_cast<const char*>(image));
  auto* m = new CUmod_st;
  for (std::size_t at = text.find(".entry"); at != std::string::npos; at = text.find(".entry", at + 6)) {
    std::size_t begin = at + 6;
    while (begin < text.size() && (text[begin] == ' ' || text[begin] == '\t')) ++begin;
    std::size_t end = begin;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
    if (end > begin) m->entries[text.substr(begin, end - begin)] = {nullptr, ParamSizes(text, end)};
  }
  if (m->entries.empty()) {
    delete m;
    return CUDA_ERROR_INVALID_IMAGE;
  }
  m->device = CurrentDevice();
  m->charged = m->device < 0 || !g_costs.enabled ? 0 : g_costs.module_bytes;
  if (!ChargeObject(m->device, m->charged)) {
    delete m;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *module = m;
  return CUDA_SUCCESS;
}

// At exit, when FAKE_CUDA_STATS_FILE names a file: what was still
// allocated, so a test can see from outside that a process (the rGPU
// server) freed everything before it exited.
void WriteStatsFile() {
  std::size_t live = 0, bytes = 0;
  {
    std::lock_guard lock(g_mu);
    live = g_allocations->size();
    for (const auto& [ptr, a] : *g_allocations) bytes += a.bytes;
  }
  if (FILE* f = std::fopen(std::getenv("FAKE_CUDA_STATS_FILE"), "w")) {
    std::fprintf(f, "live_allocations=%zu live_bytes=%zu alloc_calls=%llu launches=%llu\n", live, bytes,
                 g_alloc_calls.load(), g_launches.load());
    std::fclose(f);
  }
}

}  // namespace

extern "C" {

unsigned long long fakeCudaKernelNs() { return g_kernel_ns.load(); }

void fakeCudaGetStats(FakeCudaStats* stats) {
  stats->event_records = fakeCudaEventRecords();
  stats->launches = g_launches.load();
  stats->kernel_ns = g_kernel_ns.load();
  stats->alloc_calls = g_alloc_calls.load();
  stats->get_info_calls = g_get_info_calls.load();
  stats->object_calls = g_object_calls.load();
  std::lock_guard lock(g_mu);
  const CUdevice device = CurrentDevice();
  stats->used_bytes = device < 0 ? 0 : g_used[device];
  stats->object_bytes = device < 0 ? 0 : g_object_bytes[device];
}

CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(g_mu);
  if (g_initialized) return CUDA_SUCCESS;
  if (const char* n = std::getenv("FAKE_CUDA_DEVICES")) g_devices = std::atoi(n);
  if (g_devices < 1 || g_devices > kMaxFakeDevices) return CUDA_ERROR_NO_DEVICE;
  std::size_t total_mib = 81920;
  if (const char* t = std::getenv("FAKE_CUDA_TOTAL_MIB")) total_mib = std::strtoull(t, nullptr, 10);
  for (int d = 0; d < g_devices; ++d) {
    g_total[d] = total_mib << 20;
    g_primary[d].device = d;
  }
  g_allocations = new std::map<CUdeviceptr, Allocation>;
  if (std::getenv("FAKE_CUDA_STATS_FILE") != nullptr) std::atexit(WriteStatsFile);
  if (!gpool::cuda::ParseObjectCosts(std::getenv("FAKE_CUDA_OBJECT_COSTS"), &g_costs)) return CUDA_ERROR_INVALID_VALUE;
  g_handles = new std::map<CUmemGenericAllocationHandle, Allocation>;
  g_initialized = true;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = 12040;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** name) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *name = error == CUDA_SUCCESS ? "CUDA_SUCCESS" : error == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY"
                                                                                      : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *count = g_devices;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ValidDevice(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice device) {
  if (!ValidDevice(device) || name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<std::size_t>(len), "gpool fake GPU %d", device);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(unsigned char* uuid, CUdevice device) {
  if (!ValidDevice(device) || uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memset(uuid, 0, 16);
  std::memcpy(uuid, "gpoolfake", 9);
  uuid[15] = static_cast<unsigned char>(device);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(unsigned char* uuid, CUdevice device) { return cuDeviceGetUuid(uuid, device); }

CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
  if (!ValidDevice(device) || value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuDeviceTotalMem_v2(std::size_t* bytes, CUdevice device) {
  if (!ValidDevice(device) || bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = g_total[device];
  return CUDA_SUCCESS;
}

// The primary context holds its memory from the first retain to the last
// release (or a reset).
CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ValidDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  const std::size_t cost = g_costs.enabled ? g_costs.context_bytes : 0;
  if (g_primary_retains[device] == 0 && !ChargeObject(device, cost)) return CUDA_ERROR_OUT_OF_MEMORY;
  if (g_primary_retains[device]++ == 0) g_primary[device].charged = cost;
  *ctx = &g_primary[device];
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  if (!ValidDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (g_primary_retains[device] > 0 && --g_primary_retains[device] == 0) {
    UnchargeObject(device, g_primary[device].charged);
    g_primary[device].charged = 0;
  }
  return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int, CUdevice device) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ValidDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  const std::size_t cost = g_costs.enabled ? g_costs.context_bytes : 0;
  if (!ChargeObject(device, cost)) return CUDA_ERROR_OUT_OF_MEMORY;
  *ctx = new CUctx_st{device, cost};
  t_current = *ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (t_current == ctx) t_current = nullptr;
  if (ctx >= &g_primary[0] && ctx <= &g_primary[kMaxFakeDevices - 1]) return CUDA_SUCCESS;
  UnchargeObject(ctx->device, ctx->charged);
  delete ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  t_current = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* ctx) {
  *ctx = t_current;
  return CUDA_SUCCESS;
}

thread_local std::vector<CUctx_st*> t_pushed;  // the contexts below the current one

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  t_pushed.push_back(t_current);
  t_current = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx != nullptr) *ctx = t_current;
  t_current = t_pushed.empty() ? nullptr : t_pushed.back();
  if (!t_pushed.empty()) t_pushed.pop_back();
  return CUDA_SUCCESS;
}

unsigned g_primary_flags[kMaxFakeDevices];
CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice device, unsigned int flags) {
  if (!ValidDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  g_primary_flags[device] = flags;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxGetState(CUdevice device, unsigned int* flags, int* active) {
  if (!ValidDevice(device) || flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *flags = g_primary_flags[device];
  *active = 1;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxReset_v2(CUdevice device) {
  if (!ValidDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  UnchargeObject(device, g_primary[device].charged);
  g_primary[device].charged = 0;
  g_primary_retains[device] = 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *device = t_current->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize() { return t_current == nullptr ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS; }

CUresult cuMemGetInfo_v2(std::size_t* free, std::size_t* total) {
  g_get_info_calls.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(g_mu);
  const CUdevice device = CurrentDevice();
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  *free = g_total[device] - g_used[device];
  *total = g_total[device];
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, std::size_t bytes) { return AllocDevice(dptr, bytes); }

CUresult cuMemAllocManaged(CUdeviceptr* dptr, std::size_t bytes, unsigned int) { return AllocDevice(dptr, bytes); }

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, std::size_t* pitch, std::size_t width, std::size_t height,
                            unsigned int element_bytes) {
  if (pitch == nullptr || element_bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  // Rows are aligned to 512 bytes, as on current GPUs, or to
  // FAKE_CUDA_PITCH_ALIGN bytes (a driver that pads more than gpool guesses).
  std::size_t align = 512;
  if (const char* a = std::getenv("FAKE_CUDA_PITCH_ALIGN")) align = std::strtoull(a, nullptr, 10);
  const std::size_t row = (width + align - 1) / align * align;
  const CUresult r = AllocDevice(dptr, row * height);
  if (r == CUDA_SUCCESS) *pitch = row;
  return r;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) { return FreeDevice(dptr); }

CUresult cuMemAllocAsync(CUdeviceptr* dptr, std::size_t bytes, CUstream) { return AllocDevice(dptr, bytes); }
// Like a driver whose variants call their base entry point by name: in a
// program that put the interposer in the global scope (linked with -lcuda),
// this call binds to the interposer's cuMemAllocAsync.
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, std::size_t bytes, CUstream stream) {
  return cuMemAllocAsync(dptr, bytes, stream);
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, std::size_t bytes, CUmemoryPool, CUstream) {
  return AllocDevice(dptr, bytes);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, std::size_t bytes, CUmemoryPool, CUstream) {
  return AllocDevice(dptr, bytes);
}
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream) { return FreeDevice(dptr); }
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream) { return FreeDevice(dptr); }

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, std::size_t bytes, const CUmemAllocationProp* prop,
                     unsigned long long flags) {
  g_alloc_calls.fetch_add(1, std::memory_order_relaxed);
  if (handle == nullptr || prop == nullptr || flags != 0 || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || !ValidDevice(prop->location.id)) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  std::lock_guard lock(g_mu);
  const CUdevice device = prop->location.id;
  if (g_used[device] + bytes > g_total[device]) return CUDA_ERROR_OUT_OF_MEMORY;
  g_used[device] += bytes;
  *handle = g_next_handle++;
  (*g_handles)[*handle] = {bytes, device};
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  std::lock_guard lock(g_mu);
  auto it = g_handles->find(handle);
  if (it == g_handles->end()) return CUDA_ERROR_INVALID_VALUE;
  g_used[it->second.device] -= it->second.bytes;
  g_handles->erase(it);
  return CUDA_SUCCESS;
}

CUresult cuArrayCreate_v2(CUarray* array, const CUDA_ARRAY_DESCRIPTOR* d) {
  if (array == nullptr || d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::size_t bytes = 0;
  const CUresult r = ChargeOpaque(gpool::cuda::ArrayBytes(*d), &bytes);
  if (r == CUDA_SUCCESS) *array = new CUarray_st{bytes};
  return r;
}

CUresult cuArray3DCreate_v2(CUarray* array, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  if (array == nullptr || d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::size_t bytes = 0;
  const CUresult r = ChargeOpaque(gpool::cuda::Array3DBytes(*d), &bytes);
  if (r == CUDA_SUCCESS) *array = new CUarray_st{bytes};
  return r;
}

CUresult cuArrayDestroy(CUarray array) {
  if (array == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Uncharge(array->bytes);
  delete array;
  return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray* array, const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned int levels) {
  if (array == nullptr || d == nullptr || levels == 0) return CUDA_ERROR_INVALID_VALUE;
  const std::size_t total = gpool::cuda::MipmappedBytes(*d, levels);
  std::size_t bytes = 0;
  const CUresult r = ChargeOpaque(total, &bytes);
  if (r == CUDA_SUCCESS) *array = new CUmipmappedArray_st{bytes};
  return r;
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray array) {
  if (array == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Uncharge(array->bytes);
  delete array;
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule* module, const void* image) { return LoadModule(module, image); }

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int, void*, void**) {
  return LoadModule(module, image);
}

// A fat binary here is a fatbin header (magic 0xBA55ED50, u16 version, u16
// header size, u64 payload size) around PTX text.
CUresult cuModuleLoadFatBinary(CUmodule* module, const void* image) {
  if (image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned magic = 0;
  std::memcpy(&magic, image, 4);
  if (magic != 0xBA55ED50u) return CUDA_ERROR_INVALID_IMAGE;
  unsigned short header = 0;
  std::memcpy(&header, static_cast<const char*>(image) + 6, 2);
  return LoadModule(module, static_cast<const char*>(image) + header);
}

CUresult cuModuleUnload(CUmodule module) {
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  UnchargeObject(module->device, module->charged);
  delete module;
  return CUDA_SUCCESS;
}

// A library is a module here, loaded into the current context at once.
CUresult cuLibraryLoadData(CUlibrary* library, const void* code, void*, void**, unsigned int, void*, void**,
                           unsigned int) {
  if (library == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUmodule module = nullptr;
  const CUresult r = LoadModule(&module, code);
  if (r == CUDA_SUCCESS) *library = new CUlib_st{module};
  return r;
}

CUresult cuLibraryUnload(CUlibrary library) {
  if (library == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const CUresult r = cuModuleUnload(library->module);
  delete library;
  return r;
}

CUresult cuModuleGetFunction(CUfunction* f, CUmodule module, const char* name) {
  if (f == nullptr || module == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const FakeKernel kernel = KernelNamed(name);
  auto entry = module->entries.find(name);
  if (entry == module->entries.end() || kernel == nullptr) return CUDA_ERROR_NOT_FOUND;
  entry->second.run = kernel;
  *f = &entry->second;
  return CUDA_SUCCESS;
}

// CUDA 12.4's cuFuncGetParamInfo: offsets are each size's natural alignment,
// as the PTX ABI lays kernel parameters out.
CUresult cuFuncGetParamInfo(CUfunction f, std::size_t index, std::size_t* offset, std::size_t* size) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (offset == nullptr || size == nullptr || index >= f->param_sizes.size()) return CUDA_ERROR_INVALID_VALUE;
  std::size_t at = 0;
  for (std::size_t i = 0;; ++i) {
    const std::size_t bytes = f->param_sizes[i];
    at = (at + bytes - 1) / bytes * bytes;
    if (i == index) {
      *offset = at;
      *size = bytes;
      return CUDA_SUCCESS;
    }
    at += bytes;
  }
}

CUresult cuStreamCreate(CUstream* stream, unsigned int) {
  if (stream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUdevice device = CurrentDevice();
  const std::size_t cost = device < 0 || !g_costs.enabled ? 0 : g_costs.stream_bytes;
  if (!ChargeObject(device, cost)) return CUDA_ERROR_OUT_OF_MEMORY;
  *stream = new CUstream_st{device, cost};
  return CUDA_SUCCESS;
}

CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned int flags, int) { return cuStreamCreate(stream, flags); }

CUresult cuStreamDestroy_v2(CUstream stream) {
  if (stream == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  UnchargeObject(stream->device, stream->charged);
  delete stream;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult cuStreamSynchronize_ptsz(CUstream) { return CUDA_SUCCESS; }

// The `extra` form: one argument buffer (CU_LAUNCH_PARAM_BUFFER_POINTER,
// key 1) laid out as cuFuncGetParamInfo says.
CUresult cuLaunchKernel(CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                        unsigned int, unsigned int, CUstream, void** params, void** extra) {
  if (params != nullptr || extra == nullptr || f == nullptr) return Launch(f, params);
  char* buffer = nullptr;
  for (int i = 0; extra[i] != nullptr; i += 2)
    if (extra[i] == reinterpret_cast<void*>(1)) buffer = static_cast<char*>(extra[i + 1]);
  if (buffer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::vector<void*> pointers;
  for (std::size_t i = 0; i < f->param_sizes.size(); ++i) {
    std::size_t offset = 0, size = 0;
    cuFuncGetParamInfo(f, i, &offset, &size);
    pointers.push_back(buffer + offset);
  }
  return Launch(f, pointers.data());
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                             unsigned int by, unsigned int bz, unsigned int shared, CUstream stream, void** params,
                             void** extra) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void**) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return Launch(f, params);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  return cuLaunchKernelEx(config, f, params, extra);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int,
                                   unsigned int, unsigned int, unsigned int, CUstream, void** params) {
  return Launch(f, params);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                                        CUstream stream, void** params) {
  return cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shared, stream, params);
}

}  // extern "C"
