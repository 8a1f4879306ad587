#include "worker/cuda/interposer.h"

#include <dlfcn.h>
#include <pthread.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "worker/cuda/interposer_log.h"

namespace gpool::cuda {

InterposerState g_interposer_state;
std::atomic<bool> g_interposer_ready{false};

namespace {

// Where distributions and the NVIDIA container toolkit put the driver.
constexpr const char* kDriverPaths[] = {
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "/usr/lib64/libcuda.so.1",
    "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
    "/usr/local/nvidia/lib64/libcuda.so.1",
};

pthread_once_t g_once = PTHREAD_ONCE_INIT;
InterposerState& g_state = g_interposer_state;

std::uint64_t EnvU64(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0') {
    LogError("bad_env name=%s value=%s", name, text);
    return 0;
  }
  return value;
}

// Remote mode's "driver": GPOOL_RGPU_CLIENT_LIB, else libgpool-rgpu.so.1
// beside this library's real path (both are installed to lib/gpool/).
void* OpenRemoteClient() {
  std::string path;
  if (const char* chosen = std::getenv("GPOOL_RGPU_CLIENT_LIB"); chosen != nullptr && *chosen != '\0') {
    path = chosen;
  } else {
    Dl_info info{};
    char real[PATH_MAX];
    if (dladdr(reinterpret_cast<void*>(&OpenRemoteClient), &info) != 0 && info.dli_fname != nullptr &&
        realpath(info.dli_fname, real) != nullptr) {
      path = real;
      path = path.substr(0, path.rfind('/') + 1) + "libgpool-rgpu.so.1";
    }
  }
  if (path.empty() || path[0] != '/') {
    LogError("rgpu_client_not_absolute path=%s", path.c_str());
    return nullptr;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) LogError("rgpu_client_open_failed path=%s error=\"%s\"", path.c_str(), dlerror());
  return handle;
}

void* OpenRealDriver() {
  if (const char* endpoint = std::getenv("GPOOL_RGPU_ENDPOINT"); endpoint != nullptr && *endpoint != '\0') {
    g_state.remote = true;
    return OpenRemoteClient();
  }
  const char* chosen = std::getenv("GPOOL_CUDA_REAL_DRIVER");
  if (chosen != nullptr && *chosen != '\0') {
    if (chosen[0] != '/') {
      // A bare name would be looked up on LD_LIBRARY_PATH and find us.
      LogError("real_driver_not_absolute path=%s", chosen);
      return nullptr;
    }
    void* handle = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) LogError("real_driver_open_failed path=%s error=\"%s\"", chosen, dlerror());
    return handle;
  }
  for (const char* path : kDriverPaths) {
    if (void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL)) return handle;
  }
  LogError("real_driver_not_found hint=set_GPOOL_CUDA_REAL_DRIVER");
  return nullptr;
}

void AfterFork() {
  if (g_state.ledger != nullptr) g_state.ledger->AfterForkInChild();
}

void Init() {
  InitLog();
  InterposerState& s = g_state;
  s.real_handle = OpenRealDriver();
  if (s.real_handle != nullptr) {
#define GPOOL_CUDA_REAL(name) s.real.name = reinterpret_cast<name##_fn>(dlsym(s.real_handle, #name));
#include "worker/cuda/real_symbols.inc"
#undef GPOOL_CUDA_REAL
  }
  s.limit_bytes = EnvU64("GPOOL_GPU_MEMORY_MIB") << 20;
  const std::uint64_t pct = EnvU64("GPOOL_GPU_COMPUTE_PCT");
  s.compute_pct = pct == 0 || pct > 100 ? 100 : static_cast<int>(pct);
  if (pct > 100) LogError("bad_env name=GPOOL_GPU_COMPUTE_PCT value=%llu", static_cast<unsigned long long>(pct));
  // A compute share with no QoS named is enforced: the safe reading.
  const char* qos = std::getenv("GPOOL_SHARING_QOS");
  s.qos = s.compute_pct < 100 ? Qos::kFixedShare : Qos::kBestEffort;
  if (qos != nullptr && std::strcmp(qos, "best-effort") == 0) {
    s.qos = Qos::kBestEffort;
  } else if (qos != nullptr && std::strcmp(qos, "burst-share") == 0) {
    s.qos = Qos::kBurstShare;
  } else if (qos != nullptr && *qos != '\0' && std::strcmp(qos, "fixed-share") != 0) {
    LogError("bad_env name=GPOOL_SHARING_QOS value=%s reading=fixed-share", qos);
  }
  const char* ledger_path = std::getenv("GPOOL_CUDA_LEDGER");
  const bool has_ledger = ledger_path != nullptr && *ledger_path != '\0';
  const bool throttle = s.compute_pct < 100 && s.qos != Qos::kBestEffort;
  bool untrusted = false;
  if (s.limit_bytes != 0 || has_ledger || throttle) s.ledger = LedgerFile::Open(ledger_path, &untrusted);
  if (s.ledger == nullptr && has_ledger) {
    // Keep the limit for this process at least (and the compute buckets:
    // an untrusted file is not used for them either).
    s.ledger = LedgerFile::Open(nullptr);
  }
  s.ledger_untrusted = untrusted;
  s.count_memory = s.ledger != nullptr && (s.limit_bytes != 0 || has_ledger);
  const char* costs = std::getenv("GPOOL_CUDA_OBJECT_COSTS");
  if (!ParseObjectCosts(costs, &s.object_costs)) {
    // A setting that cannot be read charges the estimates rather than
    // nothing: a mistake must not quietly widen the share.
    LogError("bad_env name=GPOOL_CUDA_OBJECT_COSTS value=%s reading=default", costs);
    ParseObjectCosts("default", &s.object_costs);
  }
  if (!s.count_memory || s.remote) s.object_costs.enabled = false;
  if (throttle && s.ledger != nullptr) {
    s.launch_mode = LaunchMode::kThrottle;
  } else if (has_ledger) {
    s.launch_mode = LaunchMode::kPublish;
  }
  pthread_atfork(nullptr, nullptr, AfterFork);
  g_interposer_ready.store(true, std::memory_order_release);
  LogInfo("loaded real_driver=%s remote=%d memory_mib=%llu compute_pct=%d qos=%d ledger=%s context_kib=%llu "
          "module_kib=%llu stream_kib=%llu",
          s.real_handle != nullptr ? "yes" : "no", s.remote ? 1 : 0, static_cast<unsigned long long>(s.limit_bytes >> 20),
          s.compute_pct, static_cast<int>(s.qos), has_ledger ? ledger_path : "-",
          static_cast<unsigned long long>(s.object_costs.enabled ? s.object_costs.context_bytes >> 10 : 0),
          static_cast<unsigned long long>(s.object_costs.enabled ? s.object_costs.module_bytes >> 10 : 0),
          static_cast<unsigned long long>(s.object_costs.enabled ? s.object_costs.stream_bytes >> 10 : 0));
}

// At load, before the program's own code runs: the hot paths then never
// take pthread_once.
__attribute__((constructor)) void InitAtLoad() { pthread_once(&g_once, Init); }

}  // namespace

const InterposerState& InitState() {
  pthread_once(&g_once, Init);
  return g_state;
}

CUresult MissingDriverSymbol(const char* name) {
  if (State().remote) {
    LogError("rgpu_unsupported_call name=%s result=CUDA_ERROR_NOT_SUPPORTED", name);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  LogError("missing_driver_symbol name=%s result=CUDA_ERROR_NOT_FOUND", name);
  return CUDA_ERROR_NOT_FOUND;
}

void* RealSymbol(const char* name) {
  const InterposerState& s = State();
  return s.real_handle == nullptr ? nullptr : dlsym(s.real_handle, name);
}

}  // namespace gpool::cuda
