// The interposer's memory hooks: every device allocation path is counted
// per device (the current context's device, or the location cuMemCreate
// names) against GPOOL_GPU_MEMORY_MIB in the task's ledger, refused with
// CUDA_ERROR_OUT_OF_MEMORY before the driver is called when it would not
// fit, and credited back by its matching free. The memory queries report
// the share instead of the device.
//
// What is counted is what was asked for (pitch * height for pitched
// allocations, the descriptor's size for arrays), not the driver's
// rounding to pages, and async frees are credited when enqueued, while a
// pool may keep the memory cached: the share is the task's requests, which
// the driver rounds up by at most a page per allocation.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "worker/cuda/array_bytes.h"
#include "worker/cuda/cuda_driver_api.h"
#include "worker/cuda/hooks.h"
#include "worker/cuda/inside_driver.h"
#include "worker/cuda/interposer.h"
#include "worker/cuda/interposer_log.h"

#define GPOOL_CUDA_EXPORT extern "C" __attribute__((visibility("default")))

namespace gpool::cuda {
namespace {

enum Kind { kPointer, kArray, kMipmapped, kHandle, kKinds };

struct Counted {
  int device;
  std::uint64_t bytes;
};

// This process's counted allocations: what each free must credit.
struct AllocationTable {
  std::mutex mu;
  std::unordered_map<std::uint64_t, Counted> by_kind[kKinds];
};

AllocationTable& Table() {
  // Never destroyed: frees may come from other threads during exit.
  static AllocationTable* table = new AllocationTable;
  return *table;
}

int CurrentDevice(const InterposerState& s) {
  CUdevice device = -1;
  if (s.real.cuCtxGetDevice == nullptr || s.real.cuCtxGetDevice(&device) != CUDA_SUCCESS) return -1;
  return device;
}

enum class Admission { kUncounted, kCounted, kRefused };

Admission Admit(const InterposerState& s, int device, std::uint64_t bytes, const char* call) {
  if (!s.count_memory || device < 0) return Admission::kUncounted;
  if (s.ledger_untrusted) {
    static std::atomic<bool> said_untrusted{false};
    const auto log = said_untrusted.exchange(true) ? LogInfo : LogError;
    log("refused call=%s device=%d bytes=%llu reason=ledger_not_trusted", call, device,
        static_cast<unsigned long long>(bytes));
    return Admission::kRefused;
  }
  if (device >= kLedgerDevices) {
    static std::once_flag once;
    std::call_once(once, [&] { LogError("device_not_counted device=%d max=%d", device, kLedgerDevices); });
    return Admission::kUncounted;
  }
  if (s.ledger->Reserve(device, bytes, s.limit_bytes)) return Admission::kCounted;
  // The first refusal is said even without a log asked for: a program that
  // runs out of memory on a GPU with plenty free must be able to tell why.
  static std::atomic<bool> said{false};
  const auto log = said.exchange(true) ? LogInfo : LogError;
  log("refused call=%s device=%d bytes=%llu limit_bytes=%llu reason=gpu_memory_share", call, device,
      static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(s.limit_bytes));
  return Admission::kRefused;
}

// Runs `allocate` (which returns the driver's result and the new
// allocation's key) when `bytes` fit on `device`, and remembers what was
// counted so the free can credit it.
template <typename Allocate>
CUresult Governed(int device, std::uint64_t bytes, Kind kind, const char* call, Allocate&& allocate) {
  std::uint64_t key = 0;
  if (InsideDriver::Now()) return allocate(&key);  // the driver calling itself: counted by the outer hook
  const InterposerState& s = State();
  const Admission admission = Admit(s, device, bytes, call);
  if (admission == Admission::kRefused) return CUDA_ERROR_OUT_OF_MEMORY;
  const CUresult result = CallDriver([&] { return allocate(&key); });
  if (admission != Admission::kCounted) return result;
  if (result != CUDA_SUCCESS) {
    s.ledger->Release(device, bytes);
    return result;
  }
  AllocationTable& table = Table();
  std::lock_guard lock(table.mu);
  table.by_kind[kind][key] = {device, bytes};
  return result;
}

// Credits what the allocation `key` counted, after the driver freed it.
void CreditCounted(Kind kind, std::uint64_t key) {
  const InterposerState& s = State();
  if (!s.count_memory) return;
  AllocationTable& table = Table();
  Counted counted{};
  {
    std::lock_guard lock(table.mu);
    auto it = table.by_kind[kind].find(key);
    if (it == table.by_kind[kind].end()) return;
    counted = it->second;
    table.by_kind[kind].erase(it);
  }
  s.ledger->Release(counted.device, counted.bytes);
}

// Frees with `release` (a call into the real driver), then credits what
// the allocation `key` counted.
template <typename Release>
CUresult FreeAndCredit(Kind kind, std::uint64_t key, Release&& release) {
  if (InsideDriver::Now()) return release();
  const CUresult r = CallDriver(release);
  if (r == CUDA_SUCCESS) CreditCounted(kind, key);
  return r;
}

CUresult Missing(const char* name) { return MissingDriverSymbol(name); }

std::uint64_t Key(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

}  // namespace
}  // namespace gpool::cuda

using gpool::cuda::FreeAndCredit;
using gpool::cuda::InterposerState;
using gpool::cuda::Governed;
using gpool::cuda::Key;
using gpool::cuda::Missing;
using gpool::cuda::State;

// A call the real driver lacks answers CUDA_ERROR_NOT_FOUND, as the
// trampolines do.
#define GPOOL_CUDA_REAL_OR_FAIL(name) \
  const auto real_##name = State().real.name; \
  if (real_##name == nullptr) return Missing(#name)

GPOOL_CUDA_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, std::size_t bytes) {
  GPOOL_CUDA_REAL_OR_FAIL(cuMemAlloc_v2);
  return Governed(gpool::cuda::CurrentDevice(State()), bytes, gpool::cuda::kPointer, "cuMemAlloc_v2",
                  [&](std::uint64_t* key) {
                    const CUresult r = real_cuMemAlloc_v2(dptr, bytes);
                    if (r == CUDA_SUCCESS) *key = *dptr;
                    return r;
                  });
}

GPOOL_CUDA_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, std::size_t bytes, unsigned int flags) {
  GPOOL_CUDA_REAL_OR_FAIL(cuMemAllocManaged);
  return Governed(gpool::cuda::CurrentDevice(State()), bytes, gpool::cuda::kPointer, "cuMemAllocManaged",
                  [&](std::uint64_t* key) {
                    const CUresult r = real_cuMemAllocManaged(dptr, bytes, flags);
                    if (r == CUDA_SUCCESS) *key = *dptr;
                    return r;
                  });
}

// The pitch is the driver's choice, known only afterwards: count the width
// rounded up to 512 bytes (current GPUs' row alignment) first, then true
// the count up to pitch * height, undoing the allocation if that no longer
// fits.
GPOOL_CUDA_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, std::size_t* pitch, std::size_t width,
                                              std::size_t height, unsigned int element_bytes) {
  GPOOL_CUDA_REAL_OR_FAIL(cuMemAllocPitch_v2);
  const InterposerState& s = State();
  const int device = gpool::cuda::CurrentDevice(s);
  const std::uint64_t estimate = static_cast<std::uint64_t>((width + 511) / 512 * 512) * height;
  const CUresult r = Governed(device, estimate, gpool::cuda::kPointer, "cuMemAllocPitch_v2", [&](std::uint64_t* key) {
    const CUresult result = real_cuMemAllocPitch_v2(dptr, pitch, width, height, element_bytes);
    if (result == CUDA_SUCCESS) *key = *dptr;
    return result;
  });
  if (r != CUDA_SUCCESS || !s.count_memory || pitch == nullptr || gpool::cuda::InsideDriver::Now()) return r;
  const std::uint64_t actual = static_cast<std::uint64_t>(*pitch) * height;
  if (actual <= estimate) return r;
  auto& table = gpool::cuda::Table();
  std::lock_guard lock(table.mu);
  auto it = table.by_kind[gpool::cuda::kPointer].find(*dptr);
  if (it == table.by_kind[gpool::cuda::kPointer].end()) return r;
  if (s.ledger->Reserve(device, actual - estimate, s.limit_bytes)) {
    it->second.bytes = actual;
    return r;
  }
  table.by_kind[gpool::cuda::kPointer].erase(it);
  s.ledger->Release(device, estimate);
  if (s.real.cuMemFree_v2 != nullptr) s.real.cuMemFree_v2(*dptr);
  *dptr = 0;
  return CUDA_ERROR_OUT_OF_MEMORY;
}

GPOOL_CUDA_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  GPOOL_CUDA_REAL_OR_FAIL(cuMemFree_v2);
  return FreeAndCredit(gpool::cuda::kPointer, dptr, [&] { return real_cuMemFree_v2(dptr); });
}

// Stream-ordered allocations are counted on the current context's device:
// the stream's device in every program that keeps one context per device.
#define GPOOL_CUDA_ALLOC_ASYNC(name)                                                                   \
  GPOOL_CUDA_EXPORT CUresult name(CUdeviceptr* dptr, std::size_t bytes, CUstream stream) {            \
    GPOOL_CUDA_REAL_OR_FAIL(name);                                                                     \
    return Governed(gpool::cuda::CurrentDevice(State()), bytes, gpool::cuda::kPointer, #name,          \
                    [&](std::uint64_t* key) {                                                          \
                      const CUresult r = real_##name(dptr, bytes, stream);                             \
                      if (r == CUDA_SUCCESS) *key = *dptr;                                             \
                      return r;                                                                        \
                    });                                                                                \
  }
GPOOL_CUDA_ALLOC_ASYNC(cuMemAllocAsync)
GPOOL_CUDA_ALLOC_ASYNC(cuMemAllocAsync_ptsz)

#define GPOOL_CUDA_ALLOC_FROM_POOL(name)                                                                    \
  GPOOL_CUDA_EXPORT CUresult name(CUdeviceptr* dptr, std::size_t bytes, CUmemoryPool pool, CUstream stream) { \
    GPOOL_CUDA_REAL_OR_FAIL(name);                                                                          \
    return Governed(gpool::cuda::CurrentDevice(State()), bytes, gpool::cuda::kPointer, #name,               \
                    [&](std::uint64_t* key) {                                                               \
                      const CUresult r = real_##name(dptr, bytes, pool, stream);                            \
                      if (r == CUDA_SUCCESS) *key = *dptr;                                                  \
                      return r;                                                                             \
                    });                                                                                     \
  }
GPOOL_CUDA_ALLOC_FROM_POOL(cuMemAllocFromPoolAsync)
GPOOL_CUDA_ALLOC_FROM_POOL(cuMemAllocFromPoolAsync_ptsz)

#define GPOOL_CUDA_FREE_ASYNC(name)                                        \
  GPOOL_CUDA_EXPORT CUresult name(CUdeviceptr dptr, CUstream stream) {    \
    GPOOL_CUDA_REAL_OR_FAIL(name);                                         \
    return FreeAndCredit(gpool::cuda::kPointer, dptr, [&] { return real_##name(dptr, stream); }); \
  }
GPOOL_CUDA_FREE_ASYNC(cuMemFreeAsync)
GPOOL_CUDA_FREE_ASYNC(cuMemFreeAsync_ptsz)

// Physical allocations placed on a device count there; host-located ones
// (CU_MEM_LOCATION_TYPE_HOST*) are host memory and do not.
GPOOL_CUDA_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, std::size_t bytes,
                                       const CUmemAllocationProp* prop, unsigned long long flags) {
  GPOOL_CUDA_REAL_OR_FAIL(cuMemCreate);
  const int device =
      prop != nullptr && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1;
  return Governed(device, bytes, gpool::cuda::kHandle, "cuMemCreate", [&](std::uint64_t* key) {
    const CUresult r = real_cuMemCreate(handle, bytes, prop, flags);
    if (r == CUDA_SUCCESS) *key = *handle;
    return r;
  });
}

GPOOL_CUDA_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  GPOOL_CUDA_REAL_OR_FAIL(cuMemRelease);
  return FreeAndCredit(gpool::cuda::kHandle, handle, [&] { return real_cuMemRelease(handle); });
}

GPOOL_CUDA_EXPORT CUresult cuArrayCreate_v2(CUarray* array, const CUDA_ARRAY_DESCRIPTOR* desc) {
  GPOOL_CUDA_REAL_OR_FAIL(cuArrayCreate_v2);
  const std::uint64_t bytes = desc == nullptr ? 0 : gpool::cuda::ArrayBytes(*desc);
  return Governed(gpool::cuda::CurrentDevice(State()), bytes, gpool::cuda::kArray, "cuArrayCreate_v2",
                  [&](std::uint64_t* key) {
                    const CUresult r = real_cuArrayCreate_v2(array, desc);
                    if (r == CUDA_SUCCESS) *key = Key(*array);
                    return r;
                  });
}

GPOOL_CUDA_EXPORT CUresult cuArray3DCreate_v2(CUarray* array, const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  GPOOL_CUDA_REAL_OR_FAIL(cuArray3DCreate_v2);
  const std::uint64_t bytes = desc == nullptr ? 0 : gpool::cuda::Array3DBytes(*desc);
  return Governed(gpool::cuda::CurrentDevice(State()), bytes, gpool::cuda::kArray, "cuArray3DCreate_v2",
                  [&](std::uint64_t* key) {
                    const CUresult r = real_cuArray3DCreate_v2(array, desc);
                    if (r == CUDA_SUCCESS) *key = Key(*array);
                    return r;
                  });
}

GPOOL_CUDA_EXPORT CUresult cuArrayDestroy(CUarray array) {
  GPOOL_CUDA_REAL_OR_FAIL(cuArrayDestroy);
  return FreeAndCredit(gpool::cuda::kArray, Key(array), [&] { return real_cuArrayDestroy(array); });
}

GPOOL_CUDA_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray* array, const CUDA_ARRAY3D_DESCRIPTOR* desc,
                                                  unsigned int levels) {
  GPOOL_CUDA_REAL_OR_FAIL(cuMipmappedArrayCreate);
  const std::uint64_t bytes = desc == nullptr ? 0 : gpool::cuda::MipmappedBytes(*desc, levels);
  return Governed(gpool::cuda::CurrentDevice(State()), bytes, gpool::cuda::kMipmapped, "cuMipmappedArrayCreate",
                  [&](std::uint64_t* key) {
                    const CUresult r = real_cuMipmappedArrayCreate(array, desc, levels);
                    if (r == CUDA_SUCCESS) *key = Key(*array);
                    return r;
                  });
}

GPOOL_CUDA_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray array) {
  GPOOL_CUDA_REAL_OR_FAIL(cuMipmappedArrayDestroy);
  return FreeAndCredit(gpool::cuda::kMipmapped, Key(array), [&] { return real_cuMipmappedArrayDestroy(array); });
}

// The task sees its share as the device: total is the limit, free is what
// the task has left of it, never more than the device really has free.
GPOOL_CUDA_EXPORT CUresult cuMemGetInfo_v2(std::size_t* free, std::size_t* total) {
  GPOOL_CUDA_REAL_OR_FAIL(cuMemGetInfo_v2);
  const CUresult r = real_cuMemGetInfo_v2(free, total);
  const InterposerState& s = State();
  if (r == CUDA_SUCCESS && s.ledger_untrusted && free != nullptr) *free = 0;  // every allocation is refused
  if (r != CUDA_SUCCESS || s.limit_bytes == 0 || free == nullptr || total == nullptr) return r;
  const int device = gpool::cuda::CurrentDevice(s);
  const std::uint64_t used =
      device >= 0 && device < gpool::cuda::kLedgerDevices && s.ledger != nullptr ? s.ledger->Used(device) : 0;
  const std::uint64_t left = used < s.limit_bytes ? s.limit_bytes - used : 0;
  *free = static_cast<std::size_t>(std::min<std::uint64_t>(left, *free));
  *total = static_cast<std::size_t>(std::min<std::uint64_t>(s.limit_bytes, *total));
  return r;
}

GPOOL_CUDA_EXPORT CUresult cuDeviceTotalMem_v2(std::size_t* bytes, CUdevice device) {
  GPOOL_CUDA_REAL_OR_FAIL(cuDeviceTotalMem_v2);
  const CUresult r = real_cuDeviceTotalMem_v2(bytes, device);
  const std::uint64_t limit = State().limit_bytes;
  if (r == CUDA_SUCCESS && limit != 0 && bytes != nullptr) {
    *bytes = static_cast<std::size_t>(std::min<std::uint64_t>(limit, *bytes));
  }
  return r;
}
