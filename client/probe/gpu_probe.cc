#include "client/probe/gpu_probe.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace gpool::probe {

namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr double kBytesPerMiB = 1024.0 * 1024.0;

template <typename F>
bool Resolve(void* library, F& out, const char* name_v2, const char* name) {
  void* symbol = name_v2 != nullptr ? ::dlsym(library, name_v2) : nullptr;
  if (symbol == nullptr) symbol = ::dlsym(library, name);
  out = reinterpret_cast<F>(symbol);
  return symbol != nullptr;
}

Status Check(int rc, const std::string& what) {
  if (rc == 0) return Status::Ok();
  return Status::Internal(what + " failed: CUDA error " + std::to_string(rc));
}

// Host memory: pinned when the driver gives it, else ordinary.
class HostBuffer {
 public:
  HostBuffer(const CudaApi& api, size_t bytes) : api_(api) {
    if (api.cuMemAllocHost != nullptr && api.cuMemFreeHost != nullptr && api.cuMemAllocHost(&data_, bytes) == 0) {
      pinned_ = true;
    } else {
      data_ = std::malloc(bytes);
    }
    if (data_ != nullptr) std::memset(data_, 0x5a, bytes);
  }
  ~HostBuffer() {
    if (pinned_) {
      api_.cuMemFreeHost(data_);
    } else {
      std::free(data_);
    }
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  void* data() const { return data_; }

 private:
  const CudaApi& api_;
  void* data_ = nullptr;
  bool pinned_ = false;
};

// Runs `copy` once, then `rounds` times timed; the best rate in MiB/s.
template <typename Copy>
Result<double> BestRate(const CudaApi& api, const GpuProbeOptions& options, const std::string& what, Copy copy) {
  GPOOL_RETURN_IF_ERROR(Check(copy(), what));
  GPOOL_RETURN_IF_ERROR(Check(api.cuCtxSynchronize(), "cuCtxSynchronize"));
  double best = 0;
  for (uint32_t i = 0; i < options.rounds; ++i) {
    const auto start = SteadyClock::now();
    GPOOL_RETURN_IF_ERROR(Check(copy(), what));
    GPOOL_RETURN_IF_ERROR(Check(api.cuCtxSynchronize(), "cuCtxSynchronize"));
    const double seconds = std::max(std::chrono::duration<double>(SteadyClock::now() - start).count(), 1e-9);
    best = std::max(best, static_cast<double>(options.bytes) / kBytesPerMiB / seconds);
  }
  return best;
}

Result<GpuLine> ProbeDevice(const CudaApi& api, const GpuProbeOptions& options, int ordinal) {
  const std::string where = "device " + std::to_string(ordinal);
  int device = 0;
  GPOOL_RETURN_IF_ERROR(Check(api.cuDeviceGet(&device, ordinal), where + ": cuDeviceGet"));
  GpuLine line;
  line.device = ordinal;
  char name[256] = {};
  if (api.cuDeviceGetName(name, sizeof(name) - 1, device) == 0) line.name = name;
  CudaApi::Ctx ctx = nullptr;
  GPOOL_RETURN_IF_ERROR(Check(api.cuCtxCreate(&ctx, 0, device), where + ": cuCtxCreate"));
  // Everything below is freed before the context goes.
  Status status = [&]() -> Status {
    CudaApi::DevPtr dev = 0;
    GPOOL_RETURN_IF_ERROR(Check(api.cuMemAlloc(&dev, options.bytes), where + ": cuMemAlloc"));
    Status copies = [&]() -> Status {
      HostBuffer host(api, options.bytes);
      if (host.data() == nullptr) return Status::ResourceExhausted(where + ": no host memory for the copy");
      GPOOL_ASSIGN_OR_RETURN(line.h2d_mib_s, BestRate(api, options, where + ": cuMemcpyHtoD", [&] {
                               return api.cuMemcpyHtoD(dev, host.data(), options.bytes);
                             }));
      GPOOL_ASSIGN_OR_RETURN(line.d2h_mib_s, BestRate(api, options, where + ": cuMemcpyDtoH", [&] {
                               return api.cuMemcpyDtoH(host.data(), dev, options.bytes);
                             }));
      return Status::Ok();
    }();
    api.cuMemFree(dev);
    return copies;
  }();
  api.cuCtxDestroy(ctx);
  if (!status.ok()) return status;
  return line;
}

}  // namespace

Result<CudaApi> LoadCudaDriver(const std::string& path) {
  CudaApi api;
  api.library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api.library == nullptr) return Status::NotFound("no CUDA driver");
  void* lib = api.library;
  const bool ok = Resolve(lib, api.cuInit, nullptr, "cuInit") &&
                  Resolve(lib, api.cuDeviceGetCount, nullptr, "cuDeviceGetCount") &&
                  Resolve(lib, api.cuDeviceGet, nullptr, "cuDeviceGet") &&
                  Resolve(lib, api.cuDeviceGetName, nullptr, "cuDeviceGetName") &&
                  Resolve(lib, api.cuCtxCreate, "cuCtxCreate_v2", "cuCtxCreate") &&
                  Resolve(lib, api.cuCtxDestroy, "cuCtxDestroy_v2", "cuCtxDestroy") &&
                  Resolve(lib, api.cuCtxSynchronize, nullptr, "cuCtxSynchronize") &&
                  Resolve(lib, api.cuMemAlloc, "cuMemAlloc_v2", "cuMemAlloc") &&
                  Resolve(lib, api.cuMemFree, "cuMemFree_v2", "cuMemFree") &&
                  Resolve(lib, api.cuMemcpyHtoD, "cuMemcpyHtoD_v2", "cuMemcpyHtoD") &&
                  Resolve(lib, api.cuMemcpyDtoH, "cuMemcpyDtoH_v2", "cuMemcpyDtoH");
  if (!ok) {
    ::dlclose(lib);
    return Status::Unavailable("the CUDA driver at " + path + " lacks an entry point the probe needs");
  }
  // Optional: pinned host memory.
  if (!Resolve(lib, api.cuMemAllocHost, "cuMemAllocHost_v2", "cuMemAllocHost") ||
      !Resolve(lib, api.cuMemFreeHost, nullptr, "cuMemFreeHost")) {
    api.cuMemAllocHost = nullptr;
    api.cuMemFreeHost = nullptr;
  }
  return api;
}

Result<std::vector<GpuLine>> RunGpuProbe(const CudaApi& api, const GpuProbeOptions& options) {
  if (options.bytes == 0 || options.rounds == 0) {
    return Status::InvalidArgument("a GPU probe needs bytes >= 1 and rounds >= 1");
  }
  if (const int rc = api.cuInit(0); rc != 0) {
    return Status::FailedPrecondition("cuInit failed: CUDA error " + std::to_string(rc));
  }
  int count = 0;
  if (const int rc = api.cuDeviceGetCount(&count); rc != 0) {
    return Status::FailedPrecondition("cuDeviceGetCount failed: CUDA error " + std::to_string(rc));
  }
  if (count <= 0) return Status::FailedPrecondition("no CUDA devices visible");
  std::vector<GpuLine> lines;
  for (int i = 0; i < count; ++i) {
    GPOOL_ASSIGN_OR_RETURN(GpuLine line, ProbeDevice(api, options, i));
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace gpool::probe
