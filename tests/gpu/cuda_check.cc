// gpool-cuda-check: a small CUDA driver-API program that needs no toolkit
// (it dlopens "libcuda.so.1" from the library path, exactly as the CUDA
// runtime does) and runs the steps named on its command line, in order. The
// interposer's tests run it against the fake driver (worker/cuda/
// interposer_test.cc) and tests/gpu/interposer_h100.sh against a real GPU;
// its kernels are real PTX (JIT-compiled by a real driver) whose `.entry`
// names the fake also knows.
//
// Steps (sizes take K/M/G suffixes; EXPECT is a CUresult number):
//   alloc KIND BYTES EXPECT   KIND: v2 managed pitch create async async_ptsz pool array array3d mipmap
//   free INDEX EXPECT         frees the INDEX-th successful alloc with its matching call
//   meminfo FREE TOTAL        cuMemGetInfo_v2 must answer exactly this
//   totalmem BYTES            cuDeviceTotalMem_v2 of device 0
//   passthrough               cuDeviceGetName, cuDriverGetVersion, cuDeviceGetAttribute answer
//   name SUBSTRING            cuDeviceGetName contains SUBSTRING
//   missing                   an export the driver lacks (cuProfilerStart) answers CUDA_ERROR_NOT_FOUND
//   procaddr NAME VER FLAGS WHO:SYMBOL   cuGetProcAddress and _v2 answer WHO's SYMBOL: WHO is
//                             "ours" (the libcuda.so.1 loaded: the interposer) or "real"
//                             ($GPOOL_CUDA_REAL_DRIVER)
//   vecadd N                  c = a + b over N floats on the device, checked on the host
//   busy MICROS MILLIS [MIN MAX]  launches `busy` kernels of MICROS each for MILLIS of wall time and
//                             prints busy_fraction (kernel time / wall time, from the fake's
//                             counters, or launches * MICROS on a real driver); checks MIN..MAX
//   mixed MICROS EVERY COUNT  launches COUNT `busy` kernels, one of MICROS in every EVERY and the
//                             others of 0 (sizes the throttle must charge right on average)
//   reached N                 exactly N allocation calls reached the (fake) driver
//   device N                  makes device N's primary context current
//   variants MICROS           one `busy` launch through each launch entry point (cuLaunchKernel,
//                             cuLaunchKernelEx, cuLaunchCooperativeKernel and their _ptsz), and
//                             cuGraphLaunch(_ptsz) of no graph (fake driver only)
//   abi                       forwarded calls with a stack argument and a float argument, each
//                             called twice (the first resolves the trampoline), see their values
//                             (fake driver only: it echoes them)
//   stats                     prints the fake driver's counters: kernels run, their summed time,
//                             event records (fake driver only)
//   ctx EXPECT                cuCtxCreate_v2 on device 0 (the current context stays current)
//   module EXPECT             cuModuleLoadData of the check's PTX
//   library EXPECT            cuLibraryLoadData of the check's PTX
//   stream EXPECT             cuStreamCreate
//   destroy KIND INDEX EXPECT destroys the INDEX-th successful KIND (ctx module library stream)
//   release DEVICE EXPECT     cuDevicePrimaryCtxRelease_v2
//   objects TOLERANCE         the share's use as cuMemGetInfo reports it (total - free) is within
//                             TOLERANCE bytes of what the fake driver holds on the device ("what
//                             NVML sees"; fake driver only)
//   objectcalls N             exactly N context, module and stream creations reached the fake
//   hold                      prints "held" and waits for stdin to close or a line on it
//   crash                     exits at once, freeing nothing
// Prints one line per step; exits 0 when every step met its expectation.
#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tests/gpu/vector_add_ptx.h"
#include "worker/cuda/cuda_driver_api.h"
#include "worker/cuda/testdata/fake_cuda_stats.h"

namespace {

const std::string kPtx = std::string(kVectorAddPtx) + R"(
.visible .entry busy(.param .u64 busy_micros)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [busy_micros];
  mul.lo.u64 %rd2, %rd1, 1000;
  mov.u64 %rd3, %globaltimer;
  add.u64 %rd4, %rd3, %rd2;
BUSY_LOOP:
  mov.u64 %rd5, %globaltimer;
  setp.lt.u64 %p1, %rd5, %rd4;
  @%p1 bra BUSY_LOOP;
  ret;
}
)";

void* g_cuda = nullptr;  // "libcuda.so.1" as the library path finds it
void* g_real = nullptr;  // $GPOOL_CUDA_REAL_DRIVER, when set

template <typename Fn>
Fn Sym(const char* name) {
  void* p = dlsym(g_cuda, name);
  if (p == nullptr) {
    std::fprintf(stderr, "cuda_check: libcuda.so.1 lacks %s\n", name);
    std::exit(2);
  }
  return reinterpret_cast<Fn>(p);
}
#define CU(name) Sym<name##_fn>(#name)

unsigned long long Size(const std::string& text) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (*end == 'K') v <<= 10;
  if (*end == 'M') v <<= 20;
  if (*end == 'G') v <<= 30;
  return v;
}

struct Allocation {
  std::string kind;
  unsigned long long handle;
};
std::vector<Allocation> g_allocations;

CUresult Alloc(const std::string& kind, unsigned long long bytes, unsigned long long* handle) {
  CUdeviceptr p = 0;
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  if (kind == "v2") r = CU(cuMemAlloc_v2)(&p, bytes);
  if (kind == "managed") r = CU(cuMemAllocManaged)(&p, bytes, CU_MEM_ATTACH_GLOBAL);
  if (kind == "pitch") {
    std::size_t pitch = 0;
    r = CU(cuMemAllocPitch_v2)(&p, &pitch, bytes, 1, 4);
  }
  if (kind == "async") r = CU(cuMemAllocAsync)(&p, bytes, nullptr);
  if (kind == "async_ptsz") r = CU(cuMemAllocAsync_ptsz)(&p, bytes, nullptr);
  if (kind == "pool") r = CU(cuMemAllocFromPoolAsync)(&p, bytes, nullptr, nullptr);
  *handle = p;
  if (kind == "create") {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    r = CU(cuMemCreate)(handle, bytes, &prop, 0);
  }
  CUarray array = nullptr;
  if (kind == "array") {
    const CUDA_ARRAY_DESCRIPTOR d{bytes / 4, 0, CU_AD_FORMAT_FLOAT, 1};
    r = CU(cuArrayCreate_v2)(&array, &d);
  }
  if (kind == "array3d") {
    const CUDA_ARRAY3D_DESCRIPTOR d{bytes / 16, 2, 2, CU_AD_FORMAT_FLOAT, 1, 0};
    r = CU(cuArray3DCreate_v2)(&array, &d);
  }
  CUmipmappedArray mipmapped = nullptr;
  if (kind == "mipmap") {
    const CUDA_ARRAY3D_DESCRIPTOR d{bytes / 4, 0, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    r = CU(cuMipmappedArrayCreate)(&mipmapped, &d, 1);
  }
  if (array != nullptr) *handle = reinterpret_cast<std::uintptr_t>(array);
  if (mipmapped != nullptr) *handle = reinterpret_cast<std::uintptr_t>(mipmapped);
  return r;
}

CUresult Free(const Allocation& a) {
  if (a.kind == "create") return CU(cuMemRelease)(a.handle);
  if (a.kind == "array" || a.kind == "array3d") return CU(cuArrayDestroy)(reinterpret_cast<CUarray>(a.handle));
  if (a.kind == "mipmap") return CU(cuMipmappedArrayDestroy)(reinterpret_cast<CUmipmappedArray>(a.handle));
  if (a.kind == "async" || a.kind == "pool") return CU(cuMemFreeAsync)(a.handle, nullptr);
  if (a.kind == "async_ptsz") return CU(cuMemFreeAsync_ptsz)(a.handle, nullptr);
  return CU(cuMemFree_v2)(a.handle);
}

CUmodule g_module = nullptr;

CUfunction Kernel(const char* name) {
  if (g_module == nullptr && CU(cuModuleLoadData)(&g_module, kPtx.c_str()) != CUDA_SUCCESS) return nullptr;
  CUfunction f = nullptr;
  return CU(cuModuleGetFunction)(&f, g_module, name) == CUDA_SUCCESS ? f : nullptr;
}

FakeCudaStats FakeStats() {
  FakeCudaStats stats{};
  auto get = g_real == nullptr ? nullptr : reinterpret_cast<fakeCudaGetStats_fn>(dlsym(g_real, "fakeCudaGetStats"));
  if (get != nullptr) get(&stats);
  return stats;
}

// Contexts, modules, libraries and streams made by the object steps, by kind.
std::vector<void*> g_objects[4];
constexpr const char* kObjectKinds[] = {"ctx", "module", "library", "stream"};

int ObjectKindIndex(const std::string& kind) {
  for (int k = 0; k < 4; ++k) {
    if (kind == kObjectKinds[k]) return k;
  }
  return -1;
}

CUresult CreateObject(int kind, void** out) {
  switch (kind) {
    case 0: {
      CUcontext current = nullptr;
      CU(cuCtxGetCurrent)(&current);
      const CUresult r = CU(cuCtxCreate_v2)(reinterpret_cast<CUcontext*>(out), 0, 0);
      CU(cuCtxSetCurrent)(current);
      return r;
    }
    case 1: return CU(cuModuleLoadData)(reinterpret_cast<CUmodule*>(out), kPtx.c_str());
    case 2:
      return CU(cuLibraryLoadData)(reinterpret_cast<CUlibrary*>(out), kPtx.c_str(), nullptr, nullptr, 0, nullptr,
                                   nullptr, 0);
    default: return CU(cuStreamCreate)(reinterpret_cast<CUstream*>(out), 0);
  }
}

CUresult DestroyObject(int kind, void* object) {
  switch (kind) {
    case 0: return CU(cuCtxDestroy_v2)(static_cast<CUcontext>(object));
    case 1: return CU(cuModuleUnload)(static_cast<CUmodule>(object));
    case 2: return CU(cuLibraryUnload)(static_cast<CUlibrary>(object));
    default: return CU(cuStreamDestroy_v2)(static_cast<CUstream>(object));
  }
}

// The object steps (see the top); false when `op` is not one of them.
bool ObjectStep(const std::string& op, const std::function<std::string()>& arg, bool* ok) {
  if (ObjectKindIndex(op) >= 0) {
    const int kind = ObjectKindIndex(op);
    const int expect = std::atoi(arg().c_str());
    void* object = nullptr;
    const CUresult r = CreateObject(kind, &object);
    if (r == CUDA_SUCCESS) g_objects[kind].push_back(object);
    std::printf("%s result=%d expect=%d\n", op.c_str(), r, expect);
    *ok = r == expect;
  } else if (op == "destroy") {
    const int kind = ObjectKindIndex(arg());
    const auto index = static_cast<std::size_t>(std::atoi(arg().c_str()));
    const int expect = std::atoi(arg().c_str());
    const CUresult r = kind >= 0 && index < g_objects[kind].size() ? DestroyObject(kind, g_objects[kind][index])
                                                                    : CUDA_ERROR_INVALID_VALUE;
    std::printf("destroy index=%zu result=%d expect=%d\n", index, r, expect);
    *ok = r == expect;
  } else if (op == "release") {
    const int device = std::atoi(arg().c_str());
    const int expect = std::atoi(arg().c_str());
    const CUresult r = CU(cuDevicePrimaryCtxRelease_v2)(device);
    std::printf("release device=%d result=%d expect=%d\n", device, r, expect);
    *ok = r == expect;
  } else if (op == "objects") {
    const long long tolerance = static_cast<long long>(Size(arg()));
    std::size_t free = 0, total = 0;
    const CUresult r = CU(cuMemGetInfo_v2)(&free, &total);
    const FakeCudaStats stats = FakeStats();
    const long long counted = static_cast<long long>(total) - static_cast<long long>(free);
    const long long driver = static_cast<long long>(stats.used_bytes);
    std::printf("objects counted=%lld driver_used=%lld driver_objects=%llu\n", counted, driver, stats.object_bytes);
    *ok = r == CUDA_SUCCESS && g_real != nullptr && std::llabs(counted - driver) <= tolerance;
  } else if (op == "objectcalls") {
    const unsigned long long want = Size(arg());
    const FakeCudaStats stats = FakeStats();
    std::printf("objectcalls object_calls=%llu\n", stats.object_calls);
    *ok = stats.object_calls == want;
  } else {
    return false;
  }
  return true;
}

bool VectorAdd(int n) {
  CUfunction f = Kernel("vector_add");
  if (f == nullptr) return false;
  std::vector<float> a(static_cast<std::size_t>(n)), b(a.size()), c(a.size(), -1.0f);
  for (int i = 0; i < n; ++i) {
    a[static_cast<std::size_t>(i)] = static_cast<float>(i);
    b[static_cast<std::size_t>(i)] = 0.5f * static_cast<float>(i);
  }
  const std::size_t bytes = a.size() * sizeof(float);
  CUdeviceptr da = 0, db = 0, dc = 0;
  if (CU(cuMemAlloc_v2)(&da, bytes) != CUDA_SUCCESS || CU(cuMemAlloc_v2)(&db, bytes) != CUDA_SUCCESS ||
      CU(cuMemAlloc_v2)(&dc, bytes) != CUDA_SUCCESS) {
    return false;
  }
  CU(cuMemcpyHtoD_v2)(da, a.data(), bytes);
  CU(cuMemcpyHtoD_v2)(db, b.data(), bytes);
  void* params[] = {&da, &db, &dc, &n};
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  if (CU(cuLaunchKernel)(f, blocks, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr) != CUDA_SUCCESS) return false;
  CU(cuCtxSynchronize)();
  CU(cuMemcpyDtoH_v2)(c.data(), dc, bytes);
  CU(cuMemFree_v2)(da);
  CU(cuMemFree_v2)(db);
  CU(cuMemFree_v2)(dc);
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (c[i] != a[i] + b[i]) {
      std::printf("vecadd mismatch at=%zu got=%g want=%g\n", i, static_cast<double>(c[i]),
                  static_cast<double>(a[i] + b[i]));
      return false;
    }
  }
  return true;
}

// Launches `busy` kernels for `millis` of wall time; returns the fraction
// of that time kernels ran.
double Busy(unsigned long long micros, long long millis, unsigned long long* launches) {
  CUfunction f = Kernel("busy");
  if (f == nullptr) return -1;
  int sms = 1;
  CUdevice dev = 0;
  CU(cuCtxGetDevice)(&dev);
  CU(cuDeviceGetAttribute)(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  const FakeCudaStats before = FakeStats();
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + std::chrono::milliseconds(millis);
  void* params[] = {&micros};
  *launches = 0;
  while (std::chrono::steady_clock::now() < until) {
    // Two blocks per SM: the kernel occupies the whole GPU.
    if (CU(cuLaunchKernel)(f, static_cast<unsigned>(2 * sms), 1, 1, 128, 1, 1, 0, nullptr, params, nullptr) !=
        CUDA_SUCCESS) {
      return -1;
    }
    ++*launches;
  }
  CU(cuCtxSynchronize)();
  const double wall_ns =
      static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                               start).count());
  const FakeCudaStats after = FakeStats();
  const double kernel_ns = g_real != nullptr && after.launches > 0
                               ? static_cast<double>(after.kernel_ns - before.kernel_ns)
                               : static_cast<double>(*launches) * static_cast<double>(micros) * 1000.0;
  return kernel_ns / wall_ns;
}

// Launches `count` `busy` kernels, one of `micros` in every `every` and
// the others empty.
bool LaunchMixed(unsigned long long micros, long long every, long long count) {
  CUfunction f = Kernel("busy");
  if (f == nullptr || every < 1) return false;
  unsigned long long none = 0;
  void* long_params[] = {&micros};
  void* short_params[] = {&none};
  for (long long i = 0; i < count; ++i) {
    void** params = i % every == 0 ? long_params : short_params;
    if (CU(cuLaunchKernel)(f, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) != CUDA_SUCCESS) return false;
  }
  return CU(cuCtxSynchronize)() == CUDA_SUCCESS;
}

bool LaunchVariants(unsigned long long micros) {
  CUfunction f = Kernel("busy");
  if (f == nullptr) return false;
  void* params[] = {&micros};
  CUlaunchConfig config{1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, 0};
  const CUresult r[8] = {
      CU(cuLaunchKernel)(f, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr),
      CU(cuLaunchKernel_ptsz)(f, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr),
      CU(cuLaunchKernelEx)(&config, f, params, nullptr),
      CU(cuLaunchKernelEx_ptsz)(&config, f, params, nullptr),
      CU(cuLaunchCooperativeKernel)(f, 1, 1, 1, 32, 1, 1, 0, nullptr, params),
      CU(cuLaunchCooperativeKernel_ptsz)(f, 1, 1, 1, 32, 1, 1, 0, nullptr, params),
      // No graph is instantiated: on the fake this only takes the governed path.
      g_real != nullptr ? CU(cuGraphLaunch)(nullptr, nullptr) : CUDA_SUCCESS,
      g_real != nullptr ? CU(cuGraphLaunch_ptsz)(nullptr, nullptr) : CUDA_SUCCESS,
  };
  CU(cuCtxSynchronize)();
  std::printf("variants results=%d,%d,%d,%d,%d,%d,%d,%d\n", r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
  for (CUresult x : r) {
    if (x != CUDA_SUCCESS) return false;
  }
  return true;
}

// Runs argv[i...]; returns false on the first unmet expectation.
bool RunSteps(int argc, char** argv) {
  for (int i = 1; i < argc;) {
    const std::string op = argv[i++];
    auto arg = [&]() -> std::string { return i < argc ? argv[i++] : std::string(); };
    bool ok = true;
    if (op == "alloc") {
      const std::string kind = arg();
      const unsigned long long bytes = Size(arg());
      const int expect = std::atoi(arg().c_str());
      unsigned long long handle = 0;
      const CUresult r = Alloc(kind, bytes, &handle);
      if (r == CUDA_SUCCESS) g_allocations.push_back({kind, handle});
      std::printf("alloc kind=%s bytes=%llu result=%d expect=%d\n", kind.c_str(), bytes, r, expect);
      ok = r == expect;
    } else if (op == "free") {
      const auto index = static_cast<std::size_t>(std::atoi(arg().c_str()));
      const int expect = std::atoi(arg().c_str());
      const CUresult r = index < g_allocations.size() ? Free(g_allocations[index]) : CUDA_ERROR_INVALID_VALUE;
      std::printf("free index=%zu result=%d expect=%d\n", index, r, expect);
      ok = r == expect;
    } else if (op == "meminfo") {
      const unsigned long long want_free = Size(arg()), want_total = Size(arg());
      std::size_t free = 0, total = 0;
      const CUresult r = CU(cuMemGetInfo_v2)(&free, &total);
      std::printf("meminfo result=%d free=%zu total=%zu\n", r, free, total);
      ok = r == CUDA_SUCCESS && free == want_free && total == want_total;
    } else if (op == "totalmem") {
      const unsigned long long want = Size(arg());
      std::size_t total = 0;
      const CUresult r = CU(cuDeviceTotalMem_v2)(&total, 0);
      std::printf("totalmem result=%d bytes=%zu\n", r, total);
      ok = r == CUDA_SUCCESS && total == want;
    } else if (op == "passthrough" || op == "name") {
      char name[128] = {};
      int version = 0, sms = 0;
      const CUresult r1 = CU(cuDeviceGetName)(name, sizeof(name), 0);
      const CUresult r2 = CU(cuDriverGetVersion)(&version);
      const CUresult r3 = CU(cuDeviceGetAttribute)(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
      std::printf("passthrough name=\"%s\" version=%d sms=%d results=%d,%d,%d\n", name, version, sms, r1, r2, r3);
      ok = r1 == CUDA_SUCCESS && r2 == CUDA_SUCCESS && r3 == CUDA_SUCCESS && version > 0 && sms > 0;
      if (op == "name") ok = ok && std::strstr(name, arg().c_str()) != nullptr;
    } else if (op == "missing") {
      using Fn = CUresult (*)();
      const CUresult r = reinterpret_cast<Fn>(dlsym(g_cuda, "cuProfilerStart"))();
      std::printf("missing result=%d\n", r);
      ok = r == CUDA_ERROR_NOT_FOUND;
    } else if (op == "procaddr") {
      const std::string name = arg();
      const int version = std::atoi(arg().c_str());
      const auto flags = static_cast<cuuint64_t>(std::atoll(arg().c_str()));
      const std::string who = arg();
      const std::size_t colon = who.find(':');
      void* library = who.substr(0, colon) == "ours" ? g_cuda : g_real;
      void* want = library == nullptr ? nullptr : dlsym(library, who.substr(colon + 1).c_str());
      void* got1 = nullptr;
      void* got2 = nullptr;
      CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
      const CUresult r1 = CU(cuGetProcAddress)(name.c_str(), &got1, version, flags);
      const CUresult r2 = CU(cuGetProcAddress_v2)(name.c_str(), &got2, version, flags, &status);
      std::printf("procaddr name=%s want=%s results=%d,%d status=%d match=%d,%d\n", name.c_str(), who.c_str(), r1,
                  r2, status, got1 == want, got2 == want);
      ok = want != nullptr && r1 == CUDA_SUCCESS && r2 == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS &&
           got1 == want && got2 == want;
    } else if (op == "vecadd") {
      ok = VectorAdd(std::atoi(arg().c_str()));
      std::printf("vecadd ok=%d\n", ok);
    } else if (op == "busy") {
      const unsigned long long micros = Size(arg());
      const long long millis = std::atoll(arg().c_str());
      unsigned long long launches = 0;
      const double fraction = Busy(micros, millis, &launches);
      std::printf("busy_fraction=%.4f launches=%llu\n", fraction, launches);
      ok = fraction >= 0;
      if (i + 1 < argc && argv[i][0] != '\0' && std::isdigit(static_cast<unsigned char>(argv[i][0]))) {
        const double lo = std::atof(arg().c_str()), hi = std::atof(arg().c_str());
        ok = ok && fraction >= lo && fraction <= hi;
      }
    } else if (op == "mixed") {
      const unsigned long long micros = Size(arg());
      const long long every = std::atoll(arg().c_str());
      const long long count = std::atoll(arg().c_str());
      ok = LaunchMixed(micros, every, count);
      std::printf("mixed ok=%d\n", ok);
    } else if (op == "reached") {
      const unsigned long long want = Size(arg());
      const FakeCudaStats stats = FakeStats();
      std::printf("reached alloc_calls=%llu\n", stats.alloc_calls);
      ok = stats.alloc_calls == want;
    } else if (op == "device") {
      const int device = std::atoi(arg().c_str());
      CUcontext ctx = nullptr;
      const CUresult r1 = CU(cuDevicePrimaryCtxRetain)(&ctx, device);
      const CUresult r2 = r1 == CUDA_SUCCESS ? CU(cuCtxSetCurrent)(ctx) : r1;
      std::printf("device %d results=%d,%d\n", device, r1, r2);
      ok = r2 == CUDA_SUCCESS;
    } else if (op == "variants") {
      ok = LaunchVariants(Size(arg()));
    } else if (op == "abi") {
      using Occupancy = CUresult (*)(int*, int*, CUfunction, void*, std::size_t, int, unsigned);
      using SetBias = CUresult (*)(void*, float);
      using GetBias = CUresult (*)(float*, void*);
      const auto occupancy = reinterpret_cast<Occupancy>(dlsym(g_cuda, "cuOccupancyMaxPotentialBlockSizeWithFlags"));
      const auto set_bias = reinterpret_cast<SetBias>(dlsym(g_cuda, "cuTexRefSetMipmapLevelBias"));
      const auto get_bias = reinterpret_cast<GetBias>(dlsym(g_cuda, "cuTexRefGetMipmapLevelBias"));
      for (int round = 0; round < 2 && ok; ++round) {
        int grid = 0, block = 0;
        float bias = 0;
        const CUresult r1 = occupancy(&grid, &block, nullptr, nullptr, 4096 + round, 700 + round, 11);
        const CUresult r2 = set_bias(nullptr, 1.5f + static_cast<float>(round));
        const CUresult r3 = get_bias(&bias, nullptr);
        std::printf("abi round=%d results=%d,%d,%d grid=%d block=%d bias=%g\n", round, r1, r2, r3, grid, block,
                    static_cast<double>(bias));
        ok = r1 == CUDA_SUCCESS && r2 == CUDA_SUCCESS && r3 == CUDA_SUCCESS && grid == 711 + round &&
             block == 4096 + round && bias == 1.5f + static_cast<float>(round);
      }
    } else if (op == "stats") {
      const FakeCudaStats stats = FakeStats();
      std::printf("stats launches=%llu kernel_ns=%llu event_records=%llu\n", stats.launches, stats.kernel_ns,
                  stats.event_records);
      ok = stats.launches > 0;
    } else if (ObjectStep(op, arg, &ok)) {
      // one of the object steps, run
    } else if (op == "hold") {
      std::printf("held\n");
      std::fflush(stdout);
      // Until stdin closes or a line arrives (a test's "go on").
      char c = 0;
      while (read(0, &c, 1) > 0 && c != '\n') {
      }
    } else if (op == "crash") {
      std::fflush(stdout);
      _exit(0);
    } else {
      std::printf("unknown step %s\n", op.c_str());
      ok = false;
    }
    std::fflush(stdout);
    if (!ok) {
      std::printf("FAILED step=%s\n", op.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  g_cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (g_cuda == nullptr) {
    std::printf("no libcuda.so.1: %s\n", dlerror());
    return 2;
  }
  if (const char* real = std::getenv("GPOOL_CUDA_REAL_DRIVER"); real != nullptr && *real == '/') {
    // Already loaded by the interposer: this only finds that copy.
    g_real = dlopen(real, RTLD_NOW | RTLD_LOCAL);
  }
  CUcontext ctx = nullptr;
  if (CU(cuInit)(0) != CUDA_SUCCESS || CU(cuDevicePrimaryCtxRetain)(&ctx, 0) != CUDA_SUCCESS ||
      CU(cuCtxSetCurrent)(ctx) != CUDA_SUCCESS) {
    std::printf("no CUDA device\n");
    return 2;
  }
  return RunSteps(argc, argv) ? 0 : 1;
}
