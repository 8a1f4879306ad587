// gpool-rgpu-check: a CUDA driver-API program (no toolkit: it dlopens
// "libcuda.so.1" from the library path) that runs the steps named on its
// command line and prints one deterministic line per result, so a run
// against a driver directly and a run through an rGPU session
// (worker/rgpu/) can be compared byte for byte. Its kernel is real PTX (a
// real driver JIT-compiles it), whose `.entry` the fake driver also knows.
//
// Steps:
//   session         contexts, device queries, alloc, copies in every direction (sync and async),
//                   a vector_add launch on a stream (kernel-parameter array and `extra` buffer
//                   forms), events, memsets, a fat binary, frees; prints every result
//   oom MIB         retains device 0's primary context, allocates 16 MiB blocks until one fails or
//                   MIB more than asked were given; prints the failing code and the MiB allocated
//   alloc MIB       primary context, then one allocation of MIB, kept
//   sync            cuCtxSynchronize (in the primary context): prints its result and milliseconds
//   unsupported     cuProfilerStart, by symbol and through cuGetProcAddress: prints both results;
//                   then cuDeviceGetCount through cuGetProcAddress
//   errors          cuGetErrorName/cuGetErrorString of CUDA_ERROR_OUT_OF_MEMORY
//   batch N         N rounds of (memset a to the round's number, launch c = a + b) on a stream without
//                   waiting (remote: more than one batch's worth of queued calls), then the result
//   deferred        remote only: a queued memset to an address the session never allocated, then
//                   cuCtxSynchronize twice (the first reports the queued call's error, once)
//   hold            prints "held" and waits for a line on stdin (or its end)
// Exits 0 when every step ran (results are printed, not judged), 2 when the
// driver lacks a symbol the step needs.
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/gpu/vector_add_ptx.h"
#include "worker/cuda/cuda_driver_api.h"

namespace {

constexpr const auto& kPtx = kVectorAddPtx;  // an array: sizeof counts its bytes

void* g_cuda = nullptr;

void* Sym(const char* name) {
  void* p = dlsym(g_cuda, name);
  if (p == nullptr) {
    std::fprintf(stderr, "rgpu_check: libcuda.so.1 lacks %s\n", name);
    std::exit(2);
  }
  return p;
}
// Calls the driver's `name` with the given arguments, typed by the call.
#define CU(name, ...) reinterpret_cast<CUresult (*)(__VA_ARGS__)>(Sym(#name))

void Print(const char* what, CUresult r, const std::string& extra = "") {
  std::printf("%s result=%d%s%s\n", what, r, extra.empty() ? "" : " ", extra.c_str());
  std::fflush(stdout);
}

CUcontext g_primary = nullptr;

CUresult Primary() {
  CUresult r = CU(cuInit, unsigned)(0);
  if (r == CUDA_SUCCESS) r = CU(cuDevicePrimaryCtxRetain, CUcontext*, CUdevice)(&g_primary, 0);
  if (r == CUDA_SUCCESS) r = CU(cuCtxSetCurrent, CUcontext)(g_primary);
  return r;
}

double Sum(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return s;
}

std::string Num(double v) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.1f", v);
  return text;
}

void Session() {
  CUresult r = CU(cuInit, unsigned)(0);
  Print("init", r);
  int version = 0, count = 0, value = 0;
  // (Each call before its Print: argument evaluation order is unspecified.)
  r = CU(cuDriverGetVersion, int*)(&version);
  Print("driver_version", r, "version=" + std::to_string(version));
  r = CU(cuDeviceGetCount, int*)(&count);
  Print("device_count", r, "count=" + std::to_string(count));
  CUdevice dev = -1;
  r = CU(cuDeviceGet, CUdevice*, int)(&dev, 0);
  Print("device_get", r, "device=" + std::to_string(dev));
  char name[64] = {};
  r = CU(cuDeviceGetName, char*, int, CUdevice)(name, sizeof(name), dev);
  Print("device_name", r, std::string("name=") + name);
  unsigned char uuid[16] = {};
  r = CU(cuDeviceGetUuid_v2, unsigned char*, CUdevice)(uuid, dev);
  std::string hex;
  for (unsigned char c : uuid) hex += "0123456789abcdef"[c >> 4], hex += "0123456789abcdef"[c & 15];
  Print("device_uuid", r, "uuid=" + hex);
  for (int attribute : {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT}) {
    r = CU(cuDeviceGetAttribute, int*, int, CUdevice)(&value, attribute, dev);
    Print("device_attribute", r, "attribute=" + std::to_string(attribute) + " value=" + std::to_string(value));
  }
  std::size_t total = 0;
  r = CU(cuDeviceTotalMem_v2, std::size_t*, CUdevice)(&total, dev);
  Print("total_mem", r, "bytes=" + std::to_string(total));

  Print("primary_retain", CU(cuDevicePrimaryCtxRetain, CUcontext*, CUdevice)(&g_primary, dev));
  Print("primary_set_flags", CU(cuDevicePrimaryCtxSetFlags_v2, CUdevice, unsigned)(dev, 4));
  unsigned flags = 0;
  int active = 0;
  r = CU(cuDevicePrimaryCtxGetState, CUdevice, unsigned*, int*)(dev, &flags, &active);
  Print("primary_state", r, "flags=" + std::to_string(flags) + " active=" + std::to_string(active));
  Print("ctx_set_current", CU(cuCtxSetCurrent, CUcontext)(g_primary));
  CUcontext current = nullptr;
  r = CU(cuCtxGetCurrent, CUcontext*)(&current);
  Print("ctx_get_current", r, std::string("is_primary=") + (current == g_primary ? "1" : "0"));
  CUcontext created = nullptr;
  Print("ctx_create", CU(cuCtxCreate_v2, CUcontext*, unsigned, CUdevice)(&created, 0, dev));
  CUdevice ctx_dev = -1;
  r = CU(cuCtxGetDevice, CUdevice*)(&ctx_dev);
  Print("ctx_get_device", r, "device=" + std::to_string(ctx_dev));
  Print("ctx_destroy", CU(cuCtxDestroy_v2, CUcontext)(created));
  Print("ctx_set_current", CU(cuCtxSetCurrent, CUcontext)(g_primary));
  Print("ctx_push", CU(cuCtxPushCurrent_v2, CUcontext)(g_primary));
  CUcontext popped = nullptr;
  r = CU(cuCtxPopCurrent_v2, CUcontext*)(&popped);
  Print("ctx_pop", r, std::string("is_primary=") + (popped == g_primary ? "1" : "0"));
  Print("ctx_set_current", CU(cuCtxSetCurrent, CUcontext)(g_primary));

  std::size_t free_before = 0;
  r = CU(cuMemGetInfo_v2, std::size_t*, std::size_t*)(&free_before, &total);
  // Free memory differs between processes on a real GPU: only its sanity is printed.
  Print("mem_info", r,
        std::string("free_within_total=") + (free_before <= total ? "1" : "0") + " total=" + std::to_string(total));
  const int n = 4096;
  const std::size_t bytes = n * sizeof(float);
  CUdeviceptr a = 0, b = 0, c = 0, d = 0;
  for (CUdeviceptr* p : {&a, &b, &c, &d}) Print("mem_alloc", CU(cuMemAlloc_v2, CUdeviceptr*, std::size_t)(p, bytes));
  std::vector<float> ha(n), hb(n), hc(n), hd(n);
  for (int i = 0; i < n; ++i) ha[i] = static_cast<float>(i), hb[i] = static_cast<float>(2 * i + 1);
  Print("htod", CU(cuMemcpyHtoD_v2, CUdeviceptr, const void*, std::size_t)(a, ha.data(), bytes));

  CUmodule module = nullptr;
  Print("module_load", CU(cuModuleLoadData, CUmodule*, const void*)(&module, kPtx));
  CUfunction add = nullptr;
  Print("module_get_function", CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&add, module, "vector_add"));
  std::string layout;
  for (std::size_t i = 0; i < 4; ++i) {
    std::size_t offset = 0, size = 0;
    r = CU(cuFuncGetParamInfo, CUfunction, std::size_t, std::size_t*, std::size_t*)(add, i, &offset, &size);
    layout += ' ';
    layout += std::to_string(r);
    layout += ':';
    layout += std::to_string(offset);
    layout += '+';
    layout += std::to_string(size);
  }
  Print("param_info", CUDA_SUCCESS, "layout=" + layout.substr(1));

  CUstream stream = nullptr;
  Print("stream_create", CU(cuStreamCreate, CUstream*, unsigned)(&stream, 0));
  CUevent start = nullptr, end = nullptr;
  Print("event_create", CU(cuEventCreate, CUevent*, unsigned)(&start, CU_EVENT_DEFAULT));
  Print("event_create", CU(cuEventCreate, CUevent*, unsigned)(&end, CU_EVENT_DEFAULT));
  Print("event_record", CU(cuEventRecord, CUevent, CUstream)(start, stream));
  r = CU(cuMemcpyHtoDAsync_v2, CUdeviceptr, const void*, std::size_t, CUstream)(b, hb.data(), bytes, stream);
  Print("htod_async", r);
  int count_n = n;
  void* params[] = {&a, &b, &c, &count_n};
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void**, void**);
  auto launch = reinterpret_cast<Launch>(Sym("cuLaunchKernel"));
  Print("launch", launch(add, (n + 255) / 256, 1, 1, 256, 1, 1, 0, stream, params, nullptr));
  Print("event_record", CU(cuEventRecord, CUevent, CUstream)(end, stream));
  Print("stream_synchronize", CU(cuStreamSynchronize, CUstream)(stream));
  Print("event_synchronize", CU(cuEventSynchronize, CUevent)(end));
  float ms = -1;
  r = CU(cuEventElapsedTime, float*, CUevent, CUevent)(&ms, start, end);
  Print("event_elapsed", r, std::string("non_negative=") + (ms >= 0 ? "1" : "0"));
  r = CU(cuMemcpyDtoH_v2, void*, CUdeviceptr, std::size_t)(hc.data(), c, bytes);
  bool ok = true;
  for (int i = 0; i < n; ++i) ok = ok && hc[i] == ha[i] + hb[i];
  Print("vector_add", r, std::string("correct=") + (ok ? "1" : "0") + " sum=" + Num(Sum(hc)));

  // The `extra` form: d = a + c, arguments in one buffer laid out as the driver does.
  struct {
    CUdeviceptr a, c, d;
    int n;
  } packed{a, c, d, n};
  std::size_t packed_size = sizeof(packed);
  void* extra[] = {reinterpret_cast<void*>(1), &packed, reinterpret_cast<void*>(2), &packed_size, nullptr};
  Print("launch_extra", launch(add, (n + 255) / 256, 1, 1, 256, 1, 1, 0, stream, nullptr, extra));
  r = CU(cuMemcpyDtoHAsync_v2, void*, CUdeviceptr, std::size_t, CUstream)(hd.data(), d, bytes, stream);
  Print("dtoh_async", r);
  Print("stream_synchronize", CU(cuStreamSynchronize, CUstream)(stream));
  Print("vector_add_extra", CUDA_SUCCESS, "sum=" + Num(Sum(hd)));

  Print("memset_d32", CU(cuMemsetD32_v2, CUdeviceptr, unsigned, std::size_t)(c, 0x3f800000u, n));  // 1.0f
  Print("memset_d8_async", CU(cuMemsetD8Async, CUdeviceptr, unsigned char, std::size_t, CUstream)(d, 0, bytes, stream));
  Print("memset_d32_async",
        CU(cuMemsetD32Async, CUdeviceptr, unsigned, std::size_t, CUstream)(a, 0x40000000u, n / 2, stream));
  Print("dtod", CU(cuMemcpyDtoD_v2, CUdeviceptr, CUdeviceptr, std::size_t)(b, c, bytes / 2));
  Print("dtod_async",
        CU(cuMemcpyDtoDAsync_v2, CUdeviceptr, CUdeviceptr, std::size_t, CUstream)(d, a, bytes / 4, stream));
  Print("ctx_synchronize", CU(cuCtxSynchronize)());
  for (auto [label, p] : {std::pair{"a", a}, {"b", b}, {"c", c}, {"d", d}}) {
    std::vector<float> host(n);
    // cuMemcpy with unified addressing: device to host.
    r = CU(cuMemcpy, CUdeviceptr, CUdeviceptr, std::size_t)(reinterpret_cast<CUdeviceptr>(host.data()), p, bytes);
    Print("memcpy_unified", r, std::string("buffer=") + label + " sum=" + Num(Sum(host)));
  }
  Print("stream_query", CU(cuStreamQuery, CUstream)(stream));
  Print("event_query", CU(cuEventQuery, CUevent)(end));

  // A fat binary (header + PTX) through cuModuleLoadFatBinary.
  std::string fatbin(16, '\0');
  const std::uint32_t magic = 0xBA55ED50u;
  const std::uint16_t fat_version = 1, header = 16;
  const std::uint64_t payload = sizeof(kPtx);
  std::memcpy(fatbin.data(), &magic, 4);
  std::memcpy(fatbin.data() + 4, &fat_version, 2);
  std::memcpy(fatbin.data() + 6, &header, 2);
  std::memcpy(fatbin.data() + 8, &payload, 8);
  fatbin.append(kPtx, sizeof(kPtx));
  CUmodule fat_module = nullptr;
  Print("module_load_fatbin", CU(cuModuleLoadFatBinary, CUmodule*, const void*)(&fat_module, fatbin.data()));
  CUfunction fat_add = nullptr;
  r = CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&fat_add, fat_module, "vector_add");
  Print("fatbin_get_function", r);
  Print("module_unload", CU(cuModuleUnload, CUmodule)(fat_module));

  Print("module_unload", CU(cuModuleUnload, CUmodule)(module));
  Print("event_destroy", CU(cuEventDestroy_v2, CUevent)(start));
  Print("event_destroy", CU(cuEventDestroy_v2, CUevent)(end));
  Print("stream_destroy", CU(cuStreamDestroy_v2, CUstream)(stream));
  for (CUdeviceptr p : {a, b, c, d}) Print("mem_free", CU(cuMemFree_v2, CUdeviceptr)(p));
  std::size_t free_after = 0;
  r = CU(cuMemGetInfo_v2, std::size_t*, std::size_t*)(&free_after, &total);
  Print("mem_info", r, std::string("all_freed=") + (free_after == free_before ? "1" : "0"));
  Print("primary_release", CU(cuDevicePrimaryCtxRelease_v2, CUdevice)(dev));
}

void Batch(int rounds) {
  CUresult r = Primary();
  const int n = 1024;
  CUdeviceptr a = 0, b = 0, c = 0;
  for (CUdeviceptr* p : {&a, &b, &c}) {
    if (r == CUDA_SUCCESS) r = CU(cuMemAlloc_v2, CUdeviceptr*, std::size_t)(p, n * sizeof(float));
  }
  CUmodule module = nullptr;
  CUfunction add = nullptr;
  CUstream stream = nullptr;
  if (r == CUDA_SUCCESS) r = CU(cuModuleLoadData, CUmodule*, const void*)(&module, kPtx);
  if (r == CUDA_SUCCESS) r = CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&add, module, "vector_add");
  if (r == CUDA_SUCCESS) r = CU(cuStreamCreate, CUstream*, unsigned)(&stream, 0);
  if (r == CUDA_SUCCESS) r = CU(cuMemsetD32_v2, CUdeviceptr, unsigned, std::size_t)(b, 0x3f800000u, n);  // 1.0f
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void**, void**);
  auto launch = reinterpret_cast<Launch>(Sym("cuLaunchKernel"));
  int count = n;
  void* params[] = {&a, &b, &c, &count};
  for (int i = 0; i < rounds && r == CUDA_SUCCESS; ++i) {
    float value = static_cast<float>(i);
    unsigned bits = 0;
    std::memcpy(&bits, &value, 4);
    r = CU(cuMemsetD32Async, CUdeviceptr, unsigned, std::size_t, CUstream)(a, bits, n, stream);
    if (r == CUDA_SUCCESS) r = launch(add, n / 256, 1, 1, 256, 1, 1, 0, stream, params, nullptr);
  }
  if (r == CUDA_SUCCESS) r = CU(cuStreamSynchronize, CUstream)(stream);
  std::vector<float> hc(n);
  if (r == CUDA_SUCCESS) r = CU(cuMemcpyDtoH_v2, void*, CUdeviceptr, std::size_t)(hc.data(), c, n * sizeof(float));
  Print("batch", r, "rounds=" + std::to_string(rounds) + " sum=" + Num(Sum(hc)));
  if (stream != nullptr) CU(cuStreamDestroy_v2, CUstream)(stream);
  if (module != nullptr) CU(cuModuleUnload, CUmodule)(module);
  for (CUdeviceptr p : {a, b, c}) {
    if (p != 0) CU(cuMemFree_v2, CUdeviceptr)(p);
  }
}

void Oom(std::size_t mib) {
  CUresult r = Primary();
  std::size_t got = 0;
  while (r == CUDA_SUCCESS && got <= mib + 32) {
    CUdeviceptr p = 0;
    r = CU(cuMemAlloc_v2, CUdeviceptr*, std::size_t)(&p, std::size_t{16} << 20);
    if (r == CUDA_SUCCESS) got += 16;
  }
  Print("oom", r, "allocated_mib=" + std::to_string(got));
}

}  // namespace

int main(int argc, char** argv) {
  g_cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (g_cuda == nullptr) {
    std::fprintf(stderr, "rgpu_check: cannot load libcuda.so.1: %s\n", dlerror());
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    const std::string step = argv[i];
    if (step == "session") {
      Session();
    } else if (step == "oom" && i + 1 < argc) {
      Oom(std::strtoull(argv[++i], nullptr, 10));
    } else if (step == "alloc" && i + 1 < argc) {
      const std::size_t bytes = std::strtoull(argv[++i], nullptr, 10) << 20;
      CUresult r = Primary();
      CUdeviceptr p = 0;
      if (r == CUDA_SUCCESS) r = CU(cuMemAlloc_v2, CUdeviceptr*, std::size_t)(&p, bytes);
      Print("alloc", r);
    } else if (step == "sync") {
      const auto start = std::chrono::steady_clock::now();
      const CUresult r = CU(cuCtxSynchronize)();
      const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      Print("sync", r, "ms=" + std::to_string(static_cast<long long>(ms)));
    } else if (step == "unsupported") {
      Print("unsupported_symbol", CU(cuProfilerStart)());
      void* fn = nullptr;
      CUresult r = CU(cuGetProcAddress, const char*, void**, int, cuuint64_t)("cuProfilerStart", &fn, 12000, 0);
      if (r == CUDA_SUCCESS && fn != nullptr) r = reinterpret_cast<CUresult (*)()>(fn)();
      Print("unsupported_proc_address", r);
      // A covered call found the runtime's way answers from the session.
      int count = -1;
      r = CU(cuGetProcAddress, const char*, void**, int, cuuint64_t)("cuDeviceGetCount", &fn, 12000, 0);
      if (r == CUDA_SUCCESS) r = CU(cuInit, unsigned)(0);
      if (r == CUDA_SUCCESS && fn != nullptr) r = reinterpret_cast<CUresult (*)(int*)>(fn)(&count);
      Print("covered_proc_address", r, "count=" + std::to_string(count));
    } else if (step == "errors") {
      const char* name = nullptr;
      const char* text = nullptr;
      CUresult r = CU(cuGetErrorName, CUresult, const char**)(CUDA_ERROR_OUT_OF_MEMORY, &name);
      if (r == CUDA_SUCCESS) r = CU(cuGetErrorString, CUresult, const char**)(CUDA_ERROR_OUT_OF_MEMORY, &text);
      Print("errors", r, std::string("name=") + (name ? name : "-") + " text=\"" + (text ? text : "-") + "\"");
    } else if (step == "batch" && i + 1 < argc) {
      Batch(std::atoi(argv[++i]));
    } else if (step == "deferred") {
      CUresult r = Primary();
      if (r == CUDA_SUCCESS) {
        r = CU(cuMemsetD8Async, CUdeviceptr, unsigned char, std::size_t, CUstream)(0x1000, 0, 16, nullptr);
      }
      Print("deferred_memset", r);
      Print("deferred_sync", CU(cuCtxSynchronize)());
      Print("deferred_sync", CU(cuCtxSynchronize)());
      // Again with more queued calls than one batch holds: the queue goes
      // out alone when full, and its error is answered by the next call.
      CUdeviceptr p = 0;
      r = CU(cuMemAlloc_v2, CUdeviceptr*, std::size_t)(&p, 16);
      CU(cuMemsetD8Async, CUdeviceptr, unsigned char, std::size_t, CUstream)(0x1000, 0, 16, nullptr);
      int first_error_at = -1;
      for (int k = 1; k < 400 && r == CUDA_SUCCESS; ++k) {
        const CUresult q = CU(cuMemsetD8Async, CUdeviceptr, unsigned char, std::size_t, CUstream)(p, 1, 16, nullptr);
        if (q != CUDA_SUCCESS && first_error_at < 0) {
          first_error_at = k;
          r = q;
        }
      }
      Print("deferred_full", r, "first_error_at=" + std::to_string(first_error_at));
      Print("deferred_sync", CU(cuCtxSynchronize)());
      Print("mem_free", CU(cuMemFree_v2, CUdeviceptr)(p));
    } else if (step == "hold") {
      std::printf("held\n");
      std::fflush(stdout);
      char c = 0;
      while (read(0, &c, 1) == 1 && c != '\n') {
      }
    } else {
      std::fprintf(stderr, "rgpu_check: unknown step %s\n", step.c_str());
      return 2;
    }
  }
  return 0;
}
