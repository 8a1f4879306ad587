// The interposer's object hooks: the calls that make the driver keep device
// memory the task never asked for by size (contexts, loaded modules and
// libraries, streams) charge a per-object estimate (object_costs.h) to the
// task's ledger, so the share's cuMemGetInfo and its refusals match what
// NVML counts for the task, within the documented tolerance. A creation
// whose estimate does not fit is refused with CUDA_ERROR_OUT_OF_MEMORY
// before the driver is called; its destruction credits the estimate back.
//
// Where each object is charged:
//   cuCtxCreate*               the device named, per context created
//   cuDevicePrimaryCtxRetain   the device named, once per process while any
//                              retain is outstanding (the driver keeps one
//                              primary context per device however often it is
//                              retained); the last release, or a reset,
//                              credits it
//   cuModuleLoad*, cuLibraryLoad*, cuStreamCreate*
//                              the current context's device; with no current
//                              context the driver holds nothing on a device
//                              yet (a library loads into contexts lazily) and
//                              nothing is charged
// A context destroyed with allocations still in it frees them in the driver
// without their frees: those stay counted until the process exits (as
// before; the ledger then reclaims its entry).
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "worker/cuda/cuda_driver_api.h"
#include "worker/cuda/hooks.h"
#include "worker/cuda/inside_driver.h"
#include "worker/cuda/interposer.h"
#include "worker/cuda/interposer_log.h"

#define GPOOL_CUDA_EXPORT extern "C" __attribute__((visibility("default")))

namespace gpool::cuda {
namespace {

enum ObjectKind { kContextObject, kModuleObject, kLibraryObject, kStreamObject, kObjectKinds };

struct ChargedObject {
  int device;
  std::uint64_t bytes;
};

// This process's charged objects, and its primary contexts' retain counts.
struct ObjectBook {
  std::mutex mu;
  std::unordered_map<std::uint64_t, ChargedObject> by_kind[kObjectKinds];
  int primary_retains[kLedgerDevices] = {};
  std::uint64_t primary_charged[kLedgerDevices] = {};  // 0: not charged
};

ObjectBook& Book() {
  // Never destroyed: objects may be destroyed from other threads during exit.
  static ObjectBook* book = new ObjectBook;
  return *book;
}

int DeviceOfCurrentContext(const InterposerState& s) {
  CUdevice device = -1;
  if (s.real.cuCtxGetDevice == nullptr || s.real.cuCtxGetDevice(&device) != CUDA_SUCCESS) return -1;
  return device;
}

enum class ObjectCharge { kNone, kCharged, kRefused };

ObjectCharge ChargeObject(const InterposerState& s, int device, std::uint64_t bytes, const char* call) {
  if (!s.object_costs.enabled || bytes == 0 || device < 0 || device >= kLedgerDevices) return ObjectCharge::kNone;
  if (s.ledger_untrusted) {
    LogInfo("refused call=%s device=%d bytes=%llu reason=ledger_not_trusted", call, device,
            static_cast<unsigned long long>(bytes));
    return ObjectCharge::kRefused;
  }
  if (s.ledger->Reserve(device, bytes, s.limit_bytes)) return ObjectCharge::kCharged;
  // Said once as an error, as an allocation's refusal is: a program whose
  // context creation fails on a GPU with memory free must be able to tell why.
  static std::atomic<bool> said{false};
  const auto log = said.exchange(true) ? LogInfo : LogError;
  log("refused call=%s device=%d bytes=%llu limit_bytes=%llu reason=gpu_memory_share_objects", call, device,
      static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(s.limit_bytes));
  return ObjectCharge::kRefused;
}

// Runs `create` (the driver's call; it sets the new object's key) when the
// object's estimate fits, and remembers the charge for its destruction.
template <typename Create>
CUresult CreateCharged(ObjectKind kind, int device, std::uint64_t bytes, const char* call, Create&& create) {
  std::uint64_t key = 0;
  if (InsideDriver::Now()) return create(&key);  // the driver calling itself: charged by the outer hook
  const InterposerState& s = State();
  const ObjectCharge charge = ChargeObject(s, device, bytes, call);
  if (charge == ObjectCharge::kRefused) return CUDA_ERROR_OUT_OF_MEMORY;
  const CUresult result = CallDriver([&] { return create(&key); });
  if (charge != ObjectCharge::kCharged) return result;
  if (result != CUDA_SUCCESS) {
    s.ledger->Release(device, bytes);
    return result;
  }
  ObjectBook& book = Book();
  std::lock_guard lock(book.mu);
  book.by_kind[kind][key] = {device, bytes};
  return result;
}

// Destroys with `destroy` (the driver's call), then credits what the
// object `key` was charged.
template <typename Destroy>
CUresult DestroyCredited(ObjectKind kind, std::uint64_t key, Destroy&& destroy) {
  if (InsideDriver::Now()) return destroy();
  const CUresult result = CallDriver(destroy);
  if (result != CUDA_SUCCESS) return result;
  ChargedObject charged{-1, 0};
  {
    ObjectBook& book = Book();
    std::lock_guard lock(book.mu);
    auto it = book.by_kind[kind].find(key);
    if (it == book.by_kind[kind].end()) return result;
    charged = it->second;
    book.by_kind[kind].erase(it);
  }
  State().ledger->Release(charged.device, charged.bytes);
  return result;
}

std::uint64_t ObjectKey(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// The primary context: charged by the retain that finds none outstanding.
// The driver is called outside the book's lock (it may call back in), so
// two first retains racing may both charge: the second gives its charge back.
template <typename Retain>
CUresult RetainPrimary(CUdevice device, Retain&& retain) {
  if (InsideDriver::Now()) return retain();
  const InterposerState& s = State();
  const bool in_range = device >= 0 && device < kLedgerDevices;
  ObjectBook& book = Book();
  bool first = false;
  if (in_range) {
    std::lock_guard lock(book.mu);
    first = book.primary_retains[device] == 0 && book.primary_charged[device] == 0;
  }
  const std::uint64_t bytes = s.object_costs.context_bytes;
  const ObjectCharge charge =
      first ? ChargeObject(s, device, bytes, "cuDevicePrimaryCtxRetain") : ObjectCharge::kNone;
  if (charge == ObjectCharge::kRefused) return CUDA_ERROR_OUT_OF_MEMORY;
  const CUresult result = CallDriver(retain);
  bool give_back = charge == ObjectCharge::kCharged;
  if (result == CUDA_SUCCESS && in_range) {
    std::lock_guard lock(book.mu);
    ++book.primary_retains[device];
    if (give_back && book.primary_charged[device] == 0) {
      book.primary_charged[device] = bytes;
      give_back = false;
    }
  }
  if (give_back) s.ledger->Release(device, bytes);
  return result;
}

// A release that leaves no retain outstanding, or a reset (which destroys
// the context whatever its retains), credits the primary context.
template <typename Release>
CUresult ReleasePrimary(CUdevice device, bool reset, Release&& release) {
  if (InsideDriver::Now()) return release();
  const CUresult result = CallDriver(release);
  if (result != CUDA_SUCCESS || device < 0 || device >= kLedgerDevices) return result;
  std::uint64_t credit = 0;
  {
    ObjectBook& book = Book();
    std::lock_guard lock(book.mu);
    if (!reset && book.primary_retains[device] > 0) --book.primary_retains[device];
    if (reset || book.primary_retains[device] == 0) {
      credit = book.primary_charged[device];
      book.primary_charged[device] = 0;
    }
  }
  if (credit != 0) State().ledger->Release(device, credit);
  return result;
}

}  // namespace
}  // namespace gpool::cuda

using gpool::cuda::CreateCharged;
using gpool::cuda::DestroyCredited;
using gpool::cuda::ObjectKey;

// A call the real driver lacks answers as its trampoline would.
#define GPOOL_CUDA_OBJECT_REAL(name)            \
  const auto real_##name = gpool::cuda::State().real.name; \
  if (real_##name == nullptr) return gpool::cuda::MissingDriverSymbol(#name)

// Contexts: cuCtxCreate (same arguments as _v2), _v2, _v3 and _v4.
#define GPOOL_CUDA_CTX_CREATE(name, params, args)                                                              \
  GPOOL_CUDA_EXPORT CUresult name params {                                                                     \
    GPOOL_CUDA_OBJECT_REAL(name);                                                                              \
    return CreateCharged(gpool::cuda::kContextObject, device, gpool::cuda::State().object_costs.context_bytes, \
                         #name, [&](std::uint64_t* key) {                                                      \
                           const CUresult r = real_##name args;                                                \
                           if (r == CUDA_SUCCESS) *key = ObjectKey(*ctx);                                      \
                           return r;                                                                           \
                         });                                                                                   \
  }
GPOOL_CUDA_CTX_CREATE(cuCtxCreate, (CUcontext* ctx, unsigned int flags, CUdevice device), (ctx, flags, device))
GPOOL_CUDA_CTX_CREATE(cuCtxCreate_v2, (CUcontext* ctx, unsigned int flags, CUdevice device), (ctx, flags, device))
GPOOL_CUDA_CTX_CREATE(cuCtxCreate_v3,
                      (CUcontext* ctx, void* affinity, int count, unsigned int flags, CUdevice device),
                      (ctx, affinity, count, flags, device))
GPOOL_CUDA_CTX_CREATE(cuCtxCreate_v4, (CUcontext* ctx, void* params, unsigned int flags, CUdevice device),
                      (ctx, params, flags, device))

#define GPOOL_CUDA_DESTROY(name, type, kind)                                                       \
  GPOOL_CUDA_EXPORT CUresult name(type object) {                                                   \
    GPOOL_CUDA_OBJECT_REAL(name);                                                                  \
    return DestroyCredited(kind, ObjectKey(object), [&] { return real_##name(object); });          \
  }
GPOOL_CUDA_DESTROY(cuCtxDestroy, CUcontext, gpool::cuda::kContextObject)
GPOOL_CUDA_DESTROY(cuCtxDestroy_v2, CUcontext, gpool::cuda::kContextObject)
GPOOL_CUDA_DESTROY(cuModuleUnload, CUmodule, gpool::cuda::kModuleObject)
GPOOL_CUDA_DESTROY(cuLibraryUnload, CUlibrary, gpool::cuda::kLibraryObject)
GPOOL_CUDA_DESTROY(cuStreamDestroy, CUstream, gpool::cuda::kStreamObject)
GPOOL_CUDA_DESTROY(cuStreamDestroy_v2, CUstream, gpool::cuda::kStreamObject)

GPOOL_CUDA_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  GPOOL_CUDA_OBJECT_REAL(cuDevicePrimaryCtxRetain);
  return gpool::cuda::RetainPrimary(device, [&] { return real_cuDevicePrimaryCtxRetain(ctx, device); });
}

#define GPOOL_CUDA_PRIMARY_RELEASE(name, reset)                                                        \
  GPOOL_CUDA_EXPORT CUresult name(CUdevice device) {                                                   \
    GPOOL_CUDA_OBJECT_REAL(name);                                                                      \
    return gpool::cuda::ReleasePrimary(device, reset, [&] { return real_##name(device); });            \
  }
GPOOL_CUDA_PRIMARY_RELEASE(cuDevicePrimaryCtxRelease, false)
GPOOL_CUDA_PRIMARY_RELEASE(cuDevicePrimaryCtxRelease_v2, false)
GPOOL_CUDA_PRIMARY_RELEASE(cuDevicePrimaryCtxReset, true)
GPOOL_CUDA_PRIMARY_RELEASE(cuDevicePrimaryCtxReset_v2, true)

// Modules, libraries and streams: on the current context's device.
#define GPOOL_CUDA_CREATE_HERE(name, kind, cost, out, params, args)                                     \
  GPOOL_CUDA_EXPORT CUresult name params {                                                               \
    GPOOL_CUDA_OBJECT_REAL(name);                                                                        \
    const gpool::cuda::InterposerState& s = gpool::cuda::State();                                        \
    return CreateCharged(kind, gpool::cuda::DeviceOfCurrentContext(s), s.object_costs.cost, #name,       \
                         [&](std::uint64_t* key) {                                                       \
                           const CUresult r = real_##name args;                                          \
                           if (r == CUDA_SUCCESS) *key = ObjectKey(*out);                                \
                           return r;                                                                     \
                         });                                                                             \
  }
GPOOL_CUDA_CREATE_HERE(cuModuleLoad, gpool::cuda::kModuleObject, module_bytes, module,
                       (CUmodule * module, const char* path), (module, path))
GPOOL_CUDA_CREATE_HERE(cuModuleLoadData, gpool::cuda::kModuleObject, module_bytes, module,
                       (CUmodule * module, const void* image), (module, image))
GPOOL_CUDA_CREATE_HERE(cuModuleLoadDataEx, gpool::cuda::kModuleObject, module_bytes, module,
                       (CUmodule * module, const void* image, unsigned int count, void* options, void** values),
                       (module, image, count, options, values))
GPOOL_CUDA_CREATE_HERE(cuModuleLoadFatBinary, gpool::cuda::kModuleObject, module_bytes, module,
                       (CUmodule * module, const void* image), (module, image))
GPOOL_CUDA_CREATE_HERE(cuLibraryLoadData, gpool::cuda::kLibraryObject, module_bytes, library,
                       (CUlibrary * library, const void* code, void* jit_options, void** jit_values,
                        unsigned int jit_count, void* options, void** values, unsigned int count),
                       (library, code, jit_options, jit_values, jit_count, options, values, count))
GPOOL_CUDA_CREATE_HERE(cuLibraryLoadFromFile, gpool::cuda::kLibraryObject, module_bytes, library,
                       (CUlibrary * library, const char* path, void* jit_options, void** jit_values,
                        unsigned int jit_count, void* options, void** values, unsigned int count),
                       (library, path, jit_options, jit_values, jit_count, options, values, count))
GPOOL_CUDA_CREATE_HERE(cuStreamCreate, gpool::cuda::kStreamObject, stream_bytes, stream,
                       (CUstream * stream, unsigned int flags), (stream, flags))
GPOOL_CUDA_CREATE_HERE(cuStreamCreateWithPriority, gpool::cuda::kStreamObject, stream_bytes, stream,
                       (CUstream * stream, unsigned int flags, int priority), (stream, flags, priority))
